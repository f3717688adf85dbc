"""/metrics per scheduler instance (metrics_body.body_key): each instance's cycle renders its own
body from its own newest cycle; `/metrics` serves the unsharded instance's, `?shard=NAME` a shard's."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from schedweb.core.models import NodeShard
from schedweb.scheduling import metrics_body, metrics_body_file
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import MetricsBody

from .conftest import make_cluster, submit
from .test_shard_instances import submit_to

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_shard_caches")]

SHARE = "volcano_job_share"


def job_series(text: str) -> set[str]:
    """The job names with a job share series in an exposition."""
    return {s.labels.get("job_id", "") for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == SHARE}


def test_each_instance_keeps_its_own_body_and_a_shard_never_replaces_the_default_one(client):
    make_cluster(nodes=4)
    default = cycle_run()  # before any shard: the unsharded instance's body
    body = MetricsBody.objects.get(pk=metrics_body.body_key(""))
    assert body.cycle_id == default.id
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="hard", nodes_desired=["n0", "n1"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="hard", nodes_desired=["n2", "n3"])
    submit_to("sched-a", "ja", cpu="1")
    submit_to("sched-b", "jb", cpu="1")
    submit("jd", cpu="1")  # names no shard's scheduler: the unsharded instance's
    runs = {shard: cycle_run(shard=shard) for shard in ("a", "b")}
    kept = MetricsBody.objects.get(pk=metrics_body.body_key(""))
    assert (kept.cycle_id, kept.body) == (body.cycle_id, body.body)  # untouched by the shards
    for shard, run in runs.items():
        assert not run.errors and not run.skipped
        row = MetricsBody.objects.get(pk=metrics_body.body_key(shard))
        assert row.cycle_id == run.id
        response = client.get(f"/metrics?shard={shard}")
        assert response.status_code == 200
        text = response.content.decode()
        assert text.startswith(row.body)
        assert job_series(text) == {f"j{shard}"}  # the instance's own jobs' series only
    default = cycle_run()
    text = client.get("/metrics").content.decode()
    assert MetricsBody.objects.get(pk=metrics_body.body_key("")).cycle_id == default.id
    assert job_series(text) == {"jd"}
    assert MetricsBody.objects.get(pk=metrics_body.body_key("a")).cycle_id == runs["a"].id


def test_an_unknown_shard_is_a_404(client):
    assert client.get("/metrics?shard=nope").status_code == 404


def test_a_shard_without_a_stored_body_is_rendered_live(client):
    make_cluster(nodes=2)
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="hard", nodes_desired=["n0"])
    response = client.get("/metrics?shard=a")
    assert response.status_code == 200 and b"volcano_queue_allocated_milli_cpu" in response.content
    assert not MetricsBody.objects.exists()  # a scrape stores nothing


def test_keys_and_files_are_one_per_instance(settings, tmp_path):
    keys = {metrics_body.body_key(name) for name in ("", "a", "b", "shard-x")}
    assert len(keys) == 4 and metrics_body.body_key("") == metrics_body.ROW
    assert all(0 < key < 2**31 for key in keys)
    settings.METRICS_BODY_FILE = str(tmp_path / "body")
    assert metrics_body_file.path("") == tmp_path / "body"
    assert metrics_body_file.path("a") == tmp_path / "body.shard-a"
    assert metrics_body_file.path("x/../y") == Path(tmp_path / "body.shard-x%2F..%2Fy")
    settings.METRICS_BODY_FILE = ""
    assert metrics_body_file.path("a") is None

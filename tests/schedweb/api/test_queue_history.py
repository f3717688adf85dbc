"""GET /api/v1/queues/{name}/history/: every queue's share history, parents included, downsampled
for long windows (schedweb.scheduling.history), and samples for the queues the plugin omits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core.models import Queue
from schedweb.scheduling.models import CycleRun, QueueSample

GIB = 2**30


@pytest.fixture
def demo_cycled(db):
    """The demo after two cycles under the default configuration (hierarchical capacity)."""
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.demo import load_demo

    load_demo()
    for _ in range(2):
        run = cycle_run()
        assert not run.errors and not run.skipped


def _history(client, name: str, query: str = "?since=2000-01-01T00:00:00Z"):
    return client.get(f"/api/v1/queues/{name}/history/{query}")


def test_every_queue_parents_included_has_history(demo_cycled, make_user, client_for):
    client = client_for(make_user("viewer"))
    names = sorted(Queue.objects.values_list("name", flat=True))
    for name in names:
        body = _history(client, name).json()
        summary = (body["queue"], body["samples"], len(body["points"]), body["downsampled"])
        assert summary == (name, 2, 2, False)
    point = _history(client, "research").json()["points"][-1]
    # Output units (cores, bytes, GPUs): research deserves its configured 192 cores / 1536Gi / 40 GPUs and
    # holds nlp-train 64 + nlp-eval 48 + vision 47 = 159 cores, 16 + 16 + 4 = 36 GPUs.
    assert point["deserved"] == {"cpu": 192, "memory": 1536 * GIB, "nvidia.com/gpu": 40}
    assert (point["allocated"]["cpu"], point["allocated"]["nvidia.com/gpu"]) == (159, 36)
    assert point["real_capability"] == {"cpu": 200, "memory": 1600 * GIB, "nvidia.com/gpu": 40}
    assert set(point) == {"time", "cycle", "share", "overused", "deserved", "allocated", "request", "inqueue",
                          "elastic", "capability", "real_capability", "guarantee"}


def test_default_window_is_the_last_hour(demo_cycled, make_user, client_for):
    client = client_for(make_user("viewer"))
    QueueSample.objects.filter(queue="nlp").update(created=timezone.now() - timedelta(hours=2))
    assert _history(client, "nlp", "").json()["samples"] == 0
    assert _history(client, "nlp").json()["samples"] == 2


@pytest.mark.parametrize(("query", "field"), [
    ("?since=yesterday", "since"),
    ("?until=2026-02-30T00:00:00Z", "until"),
    ("?since=2030-01-01T00:00:00Z&until=2020-01-01T00:00:00Z", "since"),
    ("?points=1", "points"),
    ("?points=2001", "points"),
    ("?points=many", "points"),
])
def test_bad_queries_are_400_naming_the_field(db, make_user, client_for, query, field):
    Queue.objects.create(name="q1")
    response = _history(client_for(make_user("viewer")), "q1", query)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [field]


def test_unknown_queue_and_anonymous(db, make_user, client_for):
    assert _history(client_for(make_user("viewer")), "nope").status_code == 404
    assert _history(client_for(None), "default").status_code in (401, 403)


@pytest.fixture
def thousand_samples(db):
    """1000 samples of queue q1, one a second from t0; sample i holds i cores."""
    run = CycleRun.objects.create(started=timezone.now())
    t0 = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    QueueSample.objects.bulk_create([
        QueueSample(cycle=run, queue="q1", created=t0 + timedelta(seconds=i), allocated={"cpu": i * 1000.0})
        for i in range(1000)])
    Queue.objects.create(name="q1")
    return t0


def test_long_windows_keep_the_newest_sample_of_each_bucket(thousand_samples, make_user, client_for):
    t0 = thousand_samples
    since, until = t0.isoformat().replace("+00:00", "Z"), (t0 + timedelta(seconds=1000)).isoformat()
    query = f"?since={since}&until={until.replace('+00:00', 'Z')}&points=100"
    body = _history(client_for(make_user("viewer")), "q1", query).json()
    # 1000 s in 100 buckets of 10 s: samples 0-9, 10-19, ... each keep its newest: 9, 19, ..., 999.
    assert (body["samples"], body["downsampled"], body["bucket_seconds"]) == (1000, True, 10.0)
    assert [p["allocated"]["cpu"] for p in body["points"]] == [float(i) for i in range(9, 1000, 10)]


def test_short_windows_are_returned_whole(thousand_samples, make_user, client_for):
    t0 = thousand_samples
    query = f"?since={(t0 + timedelta(seconds=700)).isoformat().replace('+00:00', 'Z')}"
    body = _history(client_for(make_user("viewer")), "q1", query).json()
    assert (body["samples"], body["downsampled"], body["bucket_seconds"]) == (300, False, None)
    assert [p["allocated"]["cpu"] for p in body["points"]] == [float(i) for i in range(700, 1000)]


def test_queue_page_charts_use_the_same_downsampling(thousand_samples, make_user):
    from django.test import Client

    client = Client()
    client.force_login(make_user("viewer"))
    body = client.get("/queues/q1/chart.json?range=all").json()
    # More samples than the charts' 500 points: bucketed (their length depends on "now", the end of
    # the window), the newest sample always kept.
    assert body["samples"] == 1000 and body["bucket_seconds"] is not None and body["points"] <= 500
    allocated = body["figures"]["chart-cpu-history"]["data"][1]
    assert allocated["name"] == "Allocated" and allocated["y"][-1] == 999
    assert len(allocated["y"]) == body["points"]


def test_flat_proportion_parents_get_their_subtree_sums(db, make_user, client_for):
    """Flat proportion reports only queues that hold jobs; the completed samples give parents the
    sums of their children and every other queue a row, so every queue has a history."""
    from schedweb.core import services
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.default_conf import NAMED_CONFS
    from schedweb.scheduling.demo import load_demo

    load_demo()
    services.scheduler_config_activate(yaml=NAMED_CONFS["volcano-default"][0])
    run = cycle_run()
    assert not run.errors
    samples = {s.queue: s for s in QueueSample.objects.filter(cycle=run)}
    assert sorted(samples) == sorted(Queue.objects.values_list("name", flat=True))
    research = samples["research"]
    for figure in ("allocated", "request"):
        total: dict[str, float] = {}
        for child in ("nlp-eval", "nlp-train", "vision"):
            for dim, value in (getattr(samples[child], figure) or {}).items():
                total[dim] = total.get(dim, 0.0) + value
        assert getattr(research, figure) == total
    assert research.explanation == {"plugin": "rollup", "children": ["nlp", "vision"]}
    assert research.capability == {"cpu": 200000.0, "memory": 1600 * GIB, "nvidia.com/gpu": 40000.0}
    assert samples["legacy"].allocated == {} and samples["legacy"].deserved is None  # held no job
    body = _history(client_for(make_user("viewer")), "nlp").json()
    assert body["samples"] == 1 and body["points"][0]["allocated"]["cpu"] == \
        (samples["nlp-eval"].allocated["cpu"] + samples["nlp-train"].allocated["cpu"]) / 1000

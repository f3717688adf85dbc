"""Submit-time NeverFits (issue 16): the 201 of a job that can never run carries `warnings`; the
job is accepted; the first cycle gives it reason NeverFits, and `reason_code=NeverFits` lists it."""

from __future__ import annotations

import pytest

from schedweb.core import services
from schedweb.core.models import Job
from schedweb.scheduling import never_fits_check
from schedweb.scheduling.cycle import cycle_run

from .conftest import make_queue

GPU = "nvidia.com/gpu"


@pytest.fixture
def cluster(make_user, client_for, settings):
    """Six 96-cpu nodes with 8 GPUs each (48 GPUs), queue `open` and queue `small` (capability 10 cpu)."""
    settings.NEVER_FITS_PROBE_MIN_AGE = 0  # every node change is seen at once
    never_fits_check.forget()
    user = make_user("sub")
    make_queue("open", submitter_users=[user])
    make_queue("small", capability={"cpu": "10"}, submitter_users=[user])
    for i in range(6):
        services.node_create(name=f"g{i}", allocatable={"cpu": "96", "memory": "512Gi", GPU: 8, "pods": 110})
    yield client_for(user)
    never_fits_check.forget()


def submit(client, name: str, tasks: int, request: dict, queue: str = "open"):
    body = {"namespace": "ml", "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": "w", "replicas": tasks, "request": request}]}
    return client.post("/api/v1/jobs/", body, format="json")


CASES = [
    ("huge", 1, {"cpu": "1000"}, "open",
     {"code": "NeverFits", "kind": "TaskLargerThanAnyNode", "dimension": "cpu", "need": 1000.0, "limit": 96.0,
      "message": "a w task needs 1000 cpu, the largest node it can use has 96"}),
    ("gpus", 20, {"cpu": "1", GPU: 8}, "open",
     {"code": "NeverFits", "kind": "GangExceedsCluster", "dimension": GPU, "need": 160.0, "limit": 48.0,
      "message": "gang of 20 tasks needs 160 GPUs, the nodes it can use have 48 in total"}),
    ("capped", 4, {"cpu": "4"}, "small",
     {"code": "NeverFits", "kind": "GangExceedsQueueLimit", "dimension": "cpu", "need": 16.0, "limit": 10.0,
      "message": "gang of 4 tasks needs 16 cpu, queue small can never have more than 10"}),
]


@pytest.mark.parametrize(("name", "tasks", "request_", "queue", "warning"), CASES, ids=[c[0] for c in CASES])
def test_a_job_that_can_never_run_is_accepted_with_a_warning(cluster, name, tasks, request_, queue, warning):
    response = submit(cluster, name, tasks, request_, queue)
    assert response.status_code == 201, response.content
    assert response.json()["warnings"] == [warning]
    cycle_run()
    job = Job.objects.get(name=name)
    assert (job.reason_code, job.reason_details["kind"]) == ("NeverFits", warning["kind"])
    listed = cluster.get("/api/v1/jobs/?reason_code=NeverFits").json()["results"]
    assert [j["name"] for j in listed] == [name]


def test_a_job_that_fits_has_no_warning(cluster):
    response = submit(cluster, "fits", 4, {"cpu": "8", GPU: 2})
    assert (response.status_code, response.json()["warnings"]) == (201, [])


def test_the_probe_sees_a_node_added_after_it_was_built(cluster):
    first = submit(cluster, "big1", 1, {"cpu": "200"})
    assert [w["kind"] for w in first.json()["warnings"]] == ["TaskLargerThanAnyNode"]
    services.node_create(name="huge", allocatable={"cpu": "256", "memory": "1Ti"})
    assert submit(cluster, "big2", 1, {"cpu": "200"}).json()["warnings"] == []


def test_a_burst_reuses_one_probe(cluster, monkeypatch):
    built = []
    real = never_fits_check.build_probe
    monkeypatch.setattr(never_fits_check, "build_probe", lambda *a, **k: built.append(1) or real(*a, **k))
    for i in range(3):
        assert submit(cluster, f"j{i}", 2, {"cpu": "1"}).status_code == 201
    assert len(built) == 1

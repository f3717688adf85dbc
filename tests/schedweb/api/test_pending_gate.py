"""schedweb.api.pending_gate: a submitter at MAX_PENDING_JOBS_PER_USER is refused from one query,
before the body is validated, with the submission path's own 429; replays still answered."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedweb.api import pending_gate
from schedweb.core.models import Job, Queue
from tests.schedweb.api import test_request_bounds as request_bounds_test

from .conftest import make_node, make_queue

YAML = "application/yaml"
MESSAGE = ("user portal already has 2 waiting jobs (Pending or Inqueue), the most allowed "
           "(MAX_PENDING_JOBS_PER_USER); submit more when some have started or finished.")
REFUSED = {"code": "too_many_pending_jobs", "message": MESSAGE,
           "fields": {"MAX_PENDING_JOBS_PER_USER": [MESSAGE]}}


@pytest.fixture
def portal(make_user, client_for, settings):
    """User `portal` submitting to queue `sweeps`, limited to 2 waiting jobs (queues unlimited)."""
    cache.clear()
    settings.MAX_PENDING_JOBS_PER_USER, settings.MAX_PENDING_JOBS_PER_QUEUE = 2, 0
    user = make_user("portal")
    make_queue("sweeps", submitter_users=[user])
    make_node("n1", cpu="64", memory="256Gi")
    yield client_for(user), user
    cache.clear()


def item(name: str, queue: str = "sweeps", **extra: Any) -> dict:
    return {"namespace": "sw", "name": name, "queue": queue, "min_member": 1,
            "tasks": [{"name": "w", "replicas": 2, "request": {"cpu": "1"}}], **extra}


def vcjob(name: str) -> str:
    """A one-replica Volcano Job manifest (test_request_bounds' shape)."""
    return request_bounds_test.vcjob(name, 1)


def at_limit(client) -> None:
    for name in ("j0", "j1"):
        assert client.post("/api/v1/jobs/", item(name), format="json").status_code == 201


def post(client, path: str, body: Any, **kwargs: Any) -> tuple[Any, int]:
    """The response and the number of queries it made."""
    with CaptureQueriesContext(connection) as queries:
        if isinstance(body, str):
            response = client.post(path, body, content_type=YAML, **kwargs)
        else:
            response = client.post(path, body, format="json", **kwargs)
    return response, len(queries)


def test_a_single_job_and_its_dry_run_are_refused_from_one_query(portal):
    client, _ = portal
    at_limit(client)
    for path in ("/api/v1/jobs/", "/api/v1/jobs/?dry_run=true"):
        response, queries = post(client, path, item("j2"))
        assert (response.status_code, response.json(), queries) == (429, {"error": REFUSED}, 1)
        assert "Retry-After" not in response
    # What the gate does not even read: a malformed body, an unknown or a forbidden queue, a taken name.
    make_queue("private")
    for body in ({"tasks": "nope"}, item("j2", queue="nowhere"), item("j2", queue="private"), item("j0")):
        response, queries = post(client, "/api/v1/jobs/", body)
        assert (response.status_code, response.json()["error"], queries) == (429, REFUSED, 1)
    assert Job.objects.count() == 2


def test_a_batch_is_refused_item_by_item_from_one_query(portal):
    client, _ = portal
    at_limit(client)
    jobs = [item("j2"), {"bad": True}, "not an object"]
    atomic, queries = post(client, "/api/v1/jobs/batch/", {"jobs": jobs})
    assert (atomic.status_code, queries) == (429, 1)
    assert atomic.json() == {"error": {
        "code": "too_many_pending_jobs", "message": f"jobs[0]: {MESSAGE} (nothing was submitted)",
        "fields": {f"jobs[{i}].MAX_PENDING_JOBS_PER_USER": [MESSAGE] for i in range(3)}}}
    partial, queries = post(client, "/api/v1/jobs/batch/?partial=true", {"jobs": jobs})
    assert (partial.status_code, queries) == (200, 1)
    assert partial.json() == {"created": 0, "replayed": 0, "failed": 3, "results": [
        {"index": i, "status": 429, "job": None, "url": None, "warnings": [], "error": REFUSED}
        for i in range(3)]}
    # The batch envelope is read first: a malformed one is still its 400.
    assert client.post("/api/v1/jobs/batch/", {"jobs": []}, format="json").status_code == 400
    assert Job.objects.count() == 2


def test_the_gate_answers_what_the_submission_path_answers(portal):
    client, _ = portal
    assert client.post("/api/v1/jobs/", item("j0"), format="json").status_code == 201
    kept = client.post("/api/v1/jobs/", item("j1"), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert kept.status_code == 201
    # A known key takes the batch past the gate: the submission path refuses the new item.
    full = client.post("/api/v1/jobs/batch/?partial=true",
                       {"jobs": [{**item("j1"), "idempotency_key": "k1"}, item("j2")]}, format="json")
    gated = client.post("/api/v1/jobs/batch/?partial=true", {"jobs": [item("j2")]}, format="json")
    assert [r["status"] for r in full.json()["results"]] == [200, 429]
    assert full.json()["results"][1]["error"] == gated.json()["results"][0]["error"] == REFUSED


def test_a_manifest_and_its_dry_run_are_refused_from_one_query(portal):
    client, _ = portal
    at_limit(client)
    for path in ("/api/v1/manifests/import/", "/api/v1/manifests/import/?dry_run=true"):
        response, queries = post(client, path, vcjob("m1") + vcjob("m2"))
        assert (response.status_code, response.json(), queries) == (429, {"error": REFUSED}, 1)
    bad = vcjob("m1").replace("minAvailable: 1", "minAvailable: -3\n  bogus: 1")
    response, queries = post(client, "/api/v1/manifests/import/", bad)
    assert (response.status_code, response.json()["error"], queries) == (429, REFUSED, 1)
    assert post(client, "/api/v1/manifests/import/", "a: [")[0].status_code == 400  # unreadable YAML
    assert not Job.objects.filter(name__startswith="m").exists()


def test_a_manifest_that_creates_no_job_is_applied_at_the_limit(portal):
    client, user = portal
    assert client.post("/api/v1/manifests/import/", vcjob("m1"), content_type=YAML).status_code == 200
    assert client.post("/api/v1/jobs/", item("j1"), format="json").status_code == 201
    again, queries = post(client, "/api/v1/manifests/import/", vcjob("m1"))  # re-applied: unchanged
    assert (again.status_code, again.json()["jobs_unchanged"]) == (200, ["sw/m1"])
    refused, queries = post(client, "/api/v1/manifests/import/", vcjob("m1") + vcjob("m2"))
    assert (refused.status_code, refused.json(), queries) == (429, {"error": REFUSED}, 1)
    Queue.objects.get(name="sweeps").admin_users.add(user)
    queue = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: sweeps}\n"
             "spec: {weight: 1, capability: {cpu: 100}}\n")
    with CaptureQueriesContext(connection) as queries:
        pending_gate.check_manifest(user, [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}])
    assert len(queries) == 0  # no job document: no gate
    updated = client.post("/api/v1/manifests/import/", queue, content_type=YAML)
    assert (updated.status_code, updated.json()["queues_updated"]) == (200, ["sweeps"])


def test_below_the_limit_everything_is_as_before(portal):
    client, _ = portal
    response, queries = post(client, "/api/v1/jobs/", {"tasks": "nope"})
    assert (response.status_code, queries) == (400, 1)  # the gate's count, then the body's 400
    assert response.json()["error"]["code"] == "invalid"
    assert client.post("/api/v1/jobs/", item("j0"), format="json").status_code == 201
    batch = client.post("/api/v1/jobs/batch/", {"jobs": [item("j1"), {"bad": True}]}, format="json")
    assert batch.status_code == 400
    assert client.post("/api/v1/jobs/?dry_run=true", item("j1"), format="json").status_code == 200
    assert client.post("/api/v1/manifests/import/", vcjob("m1"), content_type=YAML).status_code == 200
    assert Job.objects.count() == 2


def test_a_stored_submission_is_still_replayed_at_the_limit(portal):
    client, _ = portal
    first = client.post("/api/v1/jobs/", item("j0"), format="json", HTTP_IDEMPOTENCY_KEY="k0")
    assert client.post("/api/v1/jobs/", item("j1"), format="json").status_code == 201
    replay = client.post("/api/v1/jobs/", item("j0"), format="json", HTTP_IDEMPOTENCY_KEY="k0")
    assert (replay.status_code, replay["Idempotent-Replayed"]) == (201, "true")
    assert replay.json()["id"] == first.json()["id"]
    reused = client.post("/api/v1/jobs/", item("other"), format="json", HTTP_IDEMPOTENCY_KEY="k0")
    assert (reused.status_code, reused.json()["error"]["code"]) == (409, "idempotency_key_reused")
    unknown = client.post("/api/v1/jobs/", item("j2"), format="json", HTTP_IDEMPOTENCY_KEY="k-new")
    assert (unknown.status_code, unknown.json()["error"]) == (429, REFUSED)
    batch = client.post("/api/v1/jobs/batch/", {"jobs": [{**item("j0"), "idempotency_key": "k0"}]},
                        format="json")
    assert (batch.status_code, batch.json()["replayed"]) == (201, 1)
    assert Job.objects.count() == 2


def test_a_freed_budget_admits_the_next_submission(portal):
    client, _ = portal
    at_limit(client)
    assert client.post("/api/v1/jobs/", item("j2"), format="json").status_code == 429
    Job.objects.filter(name="j0").update(phase="Running")  # started: no longer waiting
    assert client.post("/api/v1/jobs/", item("j2"), format="json").status_code == 201
    assert client.post("/api/v1/jobs/batch/", {"jobs": [item("j3")]}, format="json").status_code == 429
    Job.objects.filter(name="j1").update(phase="Completed")
    assert client.post("/api/v1/jobs/batch/", {"jobs": [item("j3")]}, format="json").status_code == 201
    assert client.post("/api/v1/manifests/import/", vcjob("m1"), content_type=YAML).status_code == 429
    Job.objects.filter(name="j2").update(phase="Cancelled")
    assert client.post("/api/v1/manifests/import/", vcjob("m1"), content_type=YAML).status_code == 200


def test_no_limit_no_gate_query(portal, settings):
    client, user = portal
    settings.MAX_PENDING_JOBS_PER_USER = 0
    with CaptureQueriesContext(connection) as queries:
        assert pending_gate.refusal(user, keys=["k"]) is None
    assert len(queries) == 0
    response, queries = post(client, "/api/v1/jobs/", {"tasks": "nope"})
    assert (response.status_code, queries) == (400, 0)  # the body's 400 before any query
    for name in ("j0", "j1", "j2"):
        assert client.post("/api/v1/jobs/", item(name), format="json").status_code == 201

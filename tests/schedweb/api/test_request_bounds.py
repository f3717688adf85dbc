"""Bounded work per request (issue 33): tasks per request and per dry run, concurrent dry runs
per user, waiting jobs per submitter and per queue; each refusal names its limit."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from schedweb.api import limits
from schedweb.core.models import Job, Task

from .conftest import make_node, make_queue

YAML = "application/yaml"


@pytest.fixture
def portal(make_user, client_for):
    cache.clear()
    user = make_user("portal")
    make_queue("sweeps", submitter_users=[user])
    make_node("n1", cpu="64", memory="256Gi")
    yield client_for(user), user
    cache.clear()


def item(name: str, replicas: int = 2, queue: str = "sweeps") -> dict:
    return {"namespace": "sw", "name": name, "queue": queue, "min_member": 1,
            "tasks": [{"name": "w", "replicas": replicas, "request": {"cpu": "1"}}]}


def vcjob(name: str, replicas: int) -> str:
    return f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: sw}}
spec:
  queue: sweeps
  minAvailable: 1
  tasks:
  - name: w
    replicas: {replicas}
    template:
      spec:
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 1}}}}}}]
"""


def test_a_batch_is_bounded_by_its_tasks_over_all_jobs(portal, settings):
    client, _ = portal
    settings.MAX_TASKS_PER_REQUEST = 15
    # 10 jobs x 2 replicas: each job is small, the request is not (the probe: 10 x 10,000).
    response = client.post("/api/v1/jobs/batch/", {"jobs": [item(f"j{i}") for i in range(10)]}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"jobs": [
        "The request would make 20 tasks; one request may make at most 15 (MAX_TASKS_PER_REQUEST)."]}
    assert not Job.objects.exists()
    partial = client.post("/api/v1/jobs/batch/?partial=true", {"jobs": [item(f"j{i}") for i in range(10)]},
                          format="json")
    assert partial.status_code == 400  # a bound on the request, not on an item
    ok = client.post("/api/v1/jobs/batch/", {"jobs": [item(f"j{i}") for i in range(7)]}, format="json")
    assert ok.status_code == 201
    assert Task.objects.count() == 14


def test_a_single_job_is_bounded_too(portal, settings):
    client, _ = portal
    settings.MAX_TASKS_PER_REQUEST = 5
    response = client.post("/api/v1/jobs/", item("big", replicas=6), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks": [
        "The request would make 6 tasks; one request may make at most 5 (MAX_TASKS_PER_REQUEST)."]}


def test_a_dry_run_has_its_own_smaller_bound(portal, settings):
    client, _ = portal
    settings.MAX_TASKS_PER_DRY_RUN = 3
    response = client.post("/api/v1/jobs/?dry_run=true", item("big", replicas=4), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks": [
        "The request would make 4 tasks; a dry run may make at most 3 (MAX_TASKS_PER_DRY_RUN)."]}
    small = client.post("/api/v1/jobs/?dry_run=true", item("small", replicas=3), format="json")
    assert small.status_code == 200
    assert client.post("/api/v1/jobs/", item("big", replicas=4), format="json").status_code == 201


def test_a_manifest_is_bounded_over_all_its_jobs_before_any_pod_is_made(portal, settings):
    client, _ = portal
    settings.MAX_TASKS_PER_REQUEST = 10
    settings.MAX_TASKS_PER_DRY_RUN = 4
    text = vcjob("a", 6) + vcjob("b", 6)
    response = client.post("/api/v1/manifests/import/", text, content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"documents": [
        "The manifest would make 12 tasks (Job replicas and Pods); one request may make at most 10 "
        "(MAX_TASKS_PER_REQUEST)."]}
    dry = client.post("/api/v1/manifests/import/?dry_run=true", vcjob("a", 5), content_type=YAML)
    assert dry.status_code == 400
    assert dry.json()["error"]["fields"]["documents"][0].endswith(
        "a dry run may make at most 4 (MAX_TASKS_PER_DRY_RUN).")
    assert client.post("/api/v1/manifests/import/", vcjob("a", 5), content_type=YAML).status_code == 200
    assert not Job.objects.filter(name="b").exists()


def test_concurrent_dry_runs_per_user_are_capped(portal, make_user, client_for, settings):
    client, user = portal
    settings.MAX_CONCURRENT_DRY_RUNS = 1
    with limits.dry_run(user):  # another request of the same user is running a dry run
        refused = client.post("/api/v1/jobs/?dry_run=true", item("a"), format="json")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_dry_runs"
        assert "MAX_CONCURRENT_DRY_RUNS" in refused.json()["error"]["message"]
        assert int(refused["Retry-After"]) >= 1
        manifest = client.post("/api/v1/manifests/import/?dry_run=true", vcjob("a", 1),
                               content_type="application/yaml")
        assert manifest.status_code == 429
        # Another user has slots of their own; a real submission needs none.
        other = make_user("other")
        make_queue("theirs", submitter_users=[other])
        assert client_for(other).post("/api/v1/jobs/?dry_run=true", item("b", queue="theirs"),
                                      format="json").status_code == 200
        assert client.post("/api/v1/jobs/", item("c"), format="json").status_code == 201
    assert client.post("/api/v1/jobs/?dry_run=true", item("a"), format="json").status_code == 200
    assert limits.max_concurrent_dry_runs() == 1 and not any(
        cache.get(f"dry-run-slot:1:{user.pk}:{slot}") for slot in range(2))  # every slot freed


def test_waiting_jobs_per_user_are_limited(portal, settings):
    client, user = portal
    settings.MAX_PENDING_JOBS_PER_USER = 2
    codes = [client.post("/api/v1/jobs/", item(f"j{i}"), format="json").status_code for i in range(2)]
    assert codes == [201, 201]
    refused = client.post("/api/v1/jobs/", item("j2"), format="json")
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "too_many_pending_jobs"
    assert error["fields"] == {"MAX_PENDING_JOBS_PER_USER": [
        "user portal already has 2 waiting jobs (Pending or Inqueue), the most allowed "
        "(MAX_PENDING_JOBS_PER_USER); submit more when some have started or finished."]}
    # A job that runs is no longer waiting: the next submission is admitted.
    Job.objects.filter(name="j0").update(phase="Running")
    assert client.post("/api/v1/jobs/", item("j2"), format="json").status_code == 201


def test_waiting_jobs_per_queue_are_limited_across_users(portal, make_user, client_for, settings):
    client, _ = portal
    settings.MAX_PENDING_JOBS_PER_QUEUE = 2
    other = make_user("other")
    from schedweb.core.models import Queue

    Queue.objects.get(name="sweeps").submitter_users.add(other)
    assert client.post("/api/v1/jobs/", item("a"), format="json").status_code == 201
    assert client_for(other).post("/api/v1/jobs/", {**item("b"), "namespace": "ot"},
                                  format="json").status_code == 201
    refused = client.post("/api/v1/jobs/", item("c"), format="json")
    assert refused.status_code == 429
    assert list(refused.json()["error"]["fields"]) == ["MAX_PENDING_JOBS_PER_QUEUE"]
    assert "queue sweeps already has 2 waiting jobs" in refused.json()["error"]["message"]


def test_a_batch_is_admitted_in_order_up_to_the_limit(portal, settings):
    client, _ = portal
    settings.MAX_PENDING_JOBS_PER_USER = 2
    jobs = [item(f"j{i}") for i in range(3)]
    atomic = client.post("/api/v1/jobs/batch/", {"jobs": jobs}, format="json")
    assert atomic.status_code == 429
    assert list(atomic.json()["error"]["fields"]) == ["jobs[2].MAX_PENDING_JOBS_PER_USER"]
    assert not Job.objects.exists()
    partial = client.post("/api/v1/jobs/batch/?partial=true", {"jobs": jobs}, format="json")
    assert partial.status_code == 200
    assert [r["status"] for r in partial.json()["results"]] == [201, 201, 429]
    assert partial.json()["results"][2]["error"]["code"] == "too_many_pending_jobs"
    assert Job.objects.count() == 2


def test_a_manifest_beyond_the_waiting_limit_writes_nothing(portal, settings):
    client, _ = portal
    settings.MAX_PENDING_JOBS_PER_USER = 1
    response = client.post("/api/v1/manifests/import/", vcjob("a", 1) + vcjob("b", 1),
                           content_type="application/yaml")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "too_many_pending_jobs"
    assert not Job.objects.exists()

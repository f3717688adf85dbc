"""Submission that portals like (issue 19): replicas, task names unique per job, namespace/name
addressing, 409 for a taken name, every field error at once, counts in every representation."""

from __future__ import annotations

import pytest

from schedweb.core.models import Job, Task

from .conftest import job_body, make_job, make_node, make_queue

GI = 2**30
GROUPS = [{"name": "ps", "replicas": 1, "request": {"cpu": "1", "memory": "1Gi"}},
          {"name": "worker", "replicas": 3, "request": {"cpu": "2", "memory": "2Gi"}},
          {"name": "chief", "request": {"cpu": "1"}, "role": "chief"}]


@pytest.fixture
def portal(make_user, client_for, settings):
    from schedweb.scheduling import never_fits_check

    settings.NEVER_FITS_PROBE_MIN_AGE = 0  # no probe of another test's nodes (warnings are asserted)
    never_fits_check.forget()
    user = make_user("portal")
    make_queue("sweeps", submitter_users=[user])
    make_node("n1", cpu="16", memory="64Gi")
    return client_for(user)


def submit(client, name: str = "train", tasks=None, **extra):
    body = {"namespace": "ml", "name": name, "queue": "sweeps", "min_member": 5,
            "tasks": tasks if tasks is not None else GROUPS, **extra}
    return client.post("/api/v1/jobs/", body, format="json")


def test_replicas_stand_for_tasks_named_as_volcano_names_pods(portal):
    response = submit(portal)
    assert response.status_code == 201, response.content
    body = response.json()
    assert [(t["name"], t["role"], t["uid"]) for t in body["tasks"]] == [
        ("train-ps-0", "ps", "ml/train/train-ps-0"), ("train-worker-0", "worker", "ml/train/train-worker-0"),
        ("train-worker-1", "worker", "ml/train/train-worker-1"),
        ("train-worker-2", "worker", "ml/train/train-worker-2"), ("chief", "chief", "ml/train/chief")]
    counts = (body["task_count"], body["running_count"], body["pending_count"], body["tasks_total"])
    assert counts == (5, 0, 5, 5)
    assert body["warnings"] == [] and body["reason_history"] == []
    assert Task.objects.filter(job__name="train").count() == 5


def test_task_names_are_unique_per_job_not_per_namespace(portal):
    assert submit(portal, "a", tasks=[{"name": "w0"}], min_member=1).status_code == 201
    again = submit(portal, "b", tasks=[{"name": "w0"}], min_member=1)
    assert again.status_code == 201, again.content
    assert sorted(Task.objects.filter(name="w0").values_list("job__name", flat=True)) == ["a", "b"]


def test_the_201_is_the_detail_as_read_back(portal):
    """Nothing is read back after the insert: the 201 must equal what GET answers (the forecast
    fields aside: GET reads the newest start-time forecast, which no job just submitted has)."""
    created = submit(portal).json()
    read = portal.get(f"/api/v1/jobs/{created['id']}/").json()
    forecast = {"forecast", "estimated_start", "estimate_basis"}
    assert {k: v for k, v in created.items() if k not in forecast | {"warnings"}} == {
        k: v for k, v in read.items() if k not in forecast}
    assert (created["estimated_start"], read["estimated_start"]) == (None, None)


def test_a_job_is_addressed_by_namespace_and_name(portal):
    job_id = submit(portal).json()["id"]
    got = portal.get("/api/v1/namespaces/ml/jobs/train/")
    assert (got.status_code, got.json()["id"], got.json()["task_count"]) == (200, job_id, 5)
    assert portal.get("/api/v1/namespaces/ml/jobs/nope/").json()["error"] == {
        "code": "not_found", "message": "No job ml/nope.", "fields": {}}
    cancelled = portal.post("/api/v1/namespaces/ml/jobs/train/cancel/")
    assert (cancelled.status_code, cancelled.json()["phase"]) == (200, "Cancelled")
    assert portal.delete("/api/v1/namespaces/ml/jobs/train/").status_code == 204  # cancelled already


def test_someone_elses_job_cannot_be_cancelled_by_name(portal, make_user, client_for):
    submit(portal)
    other = client_for(make_user("other"))
    response = other.delete("/api/v1/namespaces/ml/jobs/train/")
    assert response.status_code == 403 and Job.objects.get().phase == "Pending"


def test_every_field_error_is_listed_with_its_path(portal):
    response = submit(portal, "bad name", tasks=[
        {"name": "ok"}, {"name": "t", "request": {"cpu": "12x"}}, {"name": "u", "labels": {"a b": "c"}},
        {"name": "ok"}], priority_class="nope", min_member=1)
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert sorted(fields) == ["name", "priority_class", "tasks[1].request", "tasks[2].labels",
                              "tasks[3].name"]
    assert fields["tasks[3].name"] == ["Duplicate task name 'ok' (also tasks[0])."]
    assert fields["priority_class"] == ["Unknown priority class 'nope'."]
    assert Job.objects.count() == 0


def test_serializer_errors_of_every_task_are_listed(portal):
    response = submit(portal, tasks=[{"name": "a", "replicas": -1}, {"name": "b", "priority": "high"},
                                     {"role": "x"}], min_member=1)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "tasks[0].replicas": ["Ensure this value is greater than or equal to 0."],
        "tasks[1].priority": ["A valid integer is required."],
        "tasks[2].name": ["This field is required."]}


def test_min_member_counts_the_replicas(portal):
    response = submit(portal, tasks=[{"name": "w", "replicas": 2}], min_member=3)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"min_member": ["min_member 3 is above the task count 2."]}


def test_replicas_count_toward_the_task_limit(portal, settings):
    settings.MAX_TASKS_PER_JOB = 4
    tasks = [{"name": "w", "replicas": 3}, {"name": "x", "replicas": 2}]
    response = submit(portal, tasks=tasks, min_member=1)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "tasks": ["A job may have at most 4 tasks (MAX_TASKS_PER_JOB), got 5."]}


@pytest.mark.parametrize("path", ["/api/v1/jobs/{id}/", "/api/v1/namespaces/ml/jobs/train/"])
def test_counts_are_never_null_in_the_detail(portal, path):
    leaf = make_queue("other")
    job = make_job(leaf, "train", namespace="ml", tasks=3)
    Task.objects.filter(job=job, name="train-0").update(status="Running")
    body = portal.get(path.format(id=job.id)).json()
    assert (body["task_count"], body["running_count"], body["pending_count"]) == (3, 1, 2)
    listed = portal.get("/api/v1/jobs/").json()["results"][0]
    assert (listed["task_count"], listed["running_count"], listed["pending_count"]) == (3, 1, 2)


def test_counts_of_a_job_with_more_tasks_than_the_detail_shows(portal):
    leaf = make_queue("other")
    job = make_job(leaf, "big", namespace="ml", tasks=102, min_member=1)
    body = portal.get(f"/api/v1/jobs/{job.id}/").json()
    shown = (len(body["tasks"]), body["tasks_total"], body["task_count"], body["pending_count"])
    assert shown == (100, 102, 102, 102)


def test_reapplying_the_exported_manifest_changes_nothing_and_a_duplicate_is_409(portal):
    """Issue 19's acceptance: a 3-group job with replicas, read by namespace/name, its manifest
    re-applied, and a 409 for a duplicate."""
    assert submit(portal).status_code == 201
    assert portal.get("/api/v1/namespaces/ml/jobs/train/").status_code == 200
    manifest = portal.get("/api/v1/manifests/export/?kind=Job").content
    applied = portal.generic("POST", "/api/v1/manifests/import/", manifest, content_type="application/yaml")
    assert applied.status_code == 200, applied.content
    assert (applied.json()["jobs_unchanged"], applied.json()["jobs_created"]) == (["ml/train"], [])
    duplicate = submit(portal)
    assert (duplicate.status_code, duplicate.json()["error"]["code"]) == (409, "conflict")
    assert Job.objects.count() == 1 and Task.objects.count() == 5


def test_waiting_state_lists_pending_and_inqueue_jobs(portal):
    leaf = make_queue("other")
    for name, phase in (("p", "Pending"), ("i", "Inqueue"), ("r", "Running")):
        job = make_job(leaf, name, namespace="ml", tasks=1)
        Job.objects.filter(pk=job.pk).update(phase=phase)

    def names(query: str) -> list[str]:
        return sorted(j["name"] for j in portal.get(f"/api/v1/jobs/{query}").json()["results"])

    assert (names("?phase=Pending"), names("?state=waiting")) == (["p"], ["i", "p"])
    schema = portal.get("/api/schema/?format=json").json()
    assert "`?state=waiting` selects both" in schema["paths"]["/api/v1/jobs/"]["get"]["description"]


def test_job_submit_body_is_documented_with_replicas(portal):
    schema = portal.get("/api/schema/?format=json").json()
    task = schema["components"]["schemas"]["TaskInput"]["properties"]
    assert task["replicas"]["minimum"] == 0 and "<job>-<name>-<index>" in task["replicas"]["description"]


def test_the_job_body_helper_still_submits(portal):
    assert portal.post("/api/v1/jobs/", job_body("sweeps"), format="json").status_code == 201

"""POST .../suspend/ and .../resume/ (by id and by namespace/name), the cancel rule for who may,
409 for a job in the wrong state; DELETE of a finished job deletes it (vcctl job delete)."""

from __future__ import annotations

from schedweb.audit.models import AuditEntry
from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, Node, Task

from .test_jobs_portal import portal, submit  # noqa: F401 - the fixture


def test_suspend_and_resume_by_id_and_by_name(portal):  # noqa: F811
    job_id = submit(portal, tasks=[{"name": "w", "replicas": 2}], min_member=2).json()["id"]
    got = portal.post(f"/api/v1/jobs/{job_id}/suspend/")
    assert got.status_code == 200, got.content
    body = got.json()
    assert (body["phase"], body["reason"]["code"]) == ("Aborted", "Suspended")
    assert body["reason"]["message"].startswith("suspended by portal at ")
    again = portal.post("/api/v1/namespaces/ml/jobs/train/suspend/")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "conflict")
    assert again.json()["error"]["message"] == "phase: Job ml/train is already suspended."
    listed = portal.get("/api/v1/jobs/", {"state": "suspended"}).json()["results"]
    assert [(j["id"], j["phase"]) for j in listed] == [(job_id, "Aborted")]
    assert portal.get("/api/v1/jobs/", {"reason_code": "Suspended"}).json()["count"] == 1
    resumed = portal.post("/api/v1/namespaces/ml/jobs/train/resume/")
    assert (resumed.status_code, resumed.json()["phase"], resumed.json()["reason"]) == (200, "Pending", None)
    assert portal.post(f"/api/v1/jobs/{job_id}/resume/").status_code == 409
    assert list(AuditEntry.objects.filter(object_key="ml/train", action="set_state")
                .values_list("actor_name", flat=True)) == ["portal", "portal"]


def test_only_the_submitter_or_a_queue_admin_suspends(portal, make_user, client_for):  # noqa: F811
    job_id = submit(portal, tasks=[{"name": "w"}], min_member=1).json()["id"]
    other = client_for(make_user("other"))
    response = other.post(f"/api/v1/jobs/{job_id}/suspend/")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == ("Only the submitter or an admin of the job's queue "
                                                   "may suspend it.")
    assert Job.objects.get().phase == "Pending"


def test_a_finished_job_cannot_be_suspended(portal):  # noqa: F811
    job_id = submit(portal, tasks=[{"name": "w"}], min_member=1).json()["id"]
    portal.post(f"/api/v1/jobs/{job_id}/cancel/")
    response = portal.post(f"/api/v1/jobs/{job_id}/suspend/")
    assert response.status_code == 409
    assert response.json()["error"]["message"] == "phase: Job ml/train has already finished (Cancelled)."


def test_delete_cancels_an_unfinished_job_then_deletes_the_finished_one(portal):  # noqa: F811
    job_id = submit(portal, tasks=[{"name": "w"}], min_member=1).json()["id"]
    assert portal.delete(f"/api/v1/jobs/{job_id}/").status_code == 204
    assert Job.objects.get().phase == "Cancelled"
    assert portal.delete(f"/api/v1/jobs/{job_id}/").status_code == 204
    assert not Job.objects.exists() and not Task.objects.exists()
    assert list(AuditEntry.objects.filter(object_key="ml/train").values_list("action", flat=True)
                .order_by("id")) == ["cancel", "delete"]


def test_a_finished_job_still_releasing_is_not_deleted(portal):  # noqa: F811
    job_id = submit(portal, tasks=[{"name": "w"}], min_member=1).json()["id"]
    Task.objects.update(status="Running", node=Node.objects.get(name="n1"))
    job_cancel(job=Job.objects.get())  # Running -> Releasing
    response = portal.delete(f"/api/v1/jobs/{job_id}/")
    assert response.status_code == 409
    assert "still has tasks on nodes" in response.json()["error"]["message"]
    assert Job.objects.filter(pk=job_id).exists()

"""Suspend / Resume beside Cancel: a confirmation step, the cancel rule, the state shown after."""

from __future__ import annotations

import re

from schedweb.core.models import Job

from .test_job_lists import jobs  # noqa: F401 - the fixture


def _buttons(html: str, kind: str) -> list[str]:
    return re.findall(rf'data-{kind}="([^"]+)"', html)


def test_submitter_suspends_and_resumes_own_job(jobs, client_as):  # noqa: F811
    client = client_as(jobs["submitter"])
    page = client.get("/jobs/mine/").content.decode()
    assert _buttons(page, "suspend") == _buttons(page, "cancel") and _buttons(page, "resume") == []
    unconfirmed = client.post("/jobs/alpha/a-run/suspend/", {"next": "/jobs/mine/"})
    assert unconfirmed.status_code == 302 and Job.objects.get(name="a-run").phase == "Running"
    response = client.post("/jobs/alpha/a-run/suspend/", {"confirm": "yes", "next": "/jobs/mine/"})
    assert (response.status_code, response["Location"]) == (302, "/jobs/mine/")
    job = Job.objects.get(name="a-run")
    assert (job.phase, job.reason_code) == ("Aborted", "Suspended")
    assert sorted(job.tasks.values_list("name", "status")) == [
        ("a-run-r0", "Releasing"), ("a-run-r1", "Releasing"), ("a-run-w0", "Pending")]
    page = client.get("/jobs/mine/").content.decode()
    assert "Job alpha/a-run is suspended: its running tasks are being released" in page
    assert _buttons(page, "resume") == ["alpha/a-run"]
    detail = client.get("/jobs/alpha/a-run/").content.decode()
    assert "suspended by submitter at " in detail and 'data-resume="alpha/a-run"' in detail
    client.post("/jobs/alpha/a-run/resume/", {"confirm": "yes"})
    assert Job.objects.get(name="a-run").phase == "Pending"
    again = client.post("/jobs/alpha/a-run/resume/", {"confirm": "yes", "next": "/jobs/mine/"})
    assert "was not resumed: Job alpha/a-run is not suspended (Pending)." in client.get(
        again["Location"]).content.decode()


def test_suspend_follows_the_cancel_rule(jobs, client_as):  # noqa: F811
    assert client_as(jobs["viewer"]).post("/jobs/alpha/a-run/suspend/", {"confirm": "yes"}).status_code == 403
    assert client_as(jobs["lead"]).post("/jobs/alpha/a-inq/suspend/", {"confirm": "yes"}).status_code == 302
    assert Job.objects.get(name="a-inq").phase == "Aborted"
    assert Job.objects.get(name="a-run").phase == "Running"

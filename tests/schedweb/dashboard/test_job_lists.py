"""Job lists (/jobs/, /jobs/mine/): every state, the API's filters, sorting, paging, and cancel
(confirmation, CSRF, the API's ACL)."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import Job, Queue
from schedweb.dashboard.views import job_lists

# Newest first (the default order): the jobs of the `jobs` fixture in reverse creation order.
ALL = ["gamma/o-run", "beta/b-cancel", "beta/b-done", "alpha/a-inq", "alpha/a-wait", "alpha/a-run"]


def _job(name: str, namespace: str, queue: str, user, *, phase: str, running: int = 0, waiting: int = 0,
         done: int = 0, failed: int = 0, reason: str = "") -> Job:
    tasks = ([{"name": f"{name}-r{i}", "status": "Running", "node": "n1"} for i in range(running)]
             + [{"name": f"{name}-w{i}"} for i in range(waiting)]
             + [{"name": f"{name}-d{i}", "status": "Succeeded"} for i in range(done)]
             + [{"name": f"{name}-f{i}", "status": "Failed"} for i in range(failed)])
    for task in tasks:
        task["request"] = {"cpu": "1", "memory": "1Gi"}
    job = services.job_submit(namespace=namespace, name=name, queue=queue, tasks=tasks, min_member=1,
                              submitted_by=user)
    finished = timezone.now() - timedelta(hours=2) if phase in ("Completed", "Cancelled") else None
    Job.objects.filter(pk=job.pk).update(phase=phase, reason_code=reason, finished=finished)
    return Job.objects.get(pk=job.pk)


@pytest.fixture
def jobs(users) -> dict:
    """team > {team-a, team-b} and other; lead admins team, submitter submits to team-a; six jobs
    in every state, created in the order a-run, a-wait, a-inq, b-done, b-cancel, o-run."""
    team = services.queue_create(name="team", admin_users=[users["lead"]])
    services.queue_create(name="team-a", parent=team, submitter_users=[users["submitter"]])
    services.queue_create(name="team-b", parent=team)
    services.queue_create(name="other")
    services.node_create(name="n1", allocatable={"cpu": "64", "memory": "256Gi"})
    _job("a-run", "alpha", "team-a", users["submitter"], phase="Running", running=2, waiting=1)
    _job("a-wait", "alpha", "team-a", users["submitter"], phase="Pending", waiting=2, reason="NodeFit")
    _job("a-inq", "alpha", "team-a", users["staff"], phase="Inqueue", waiting=1, reason="GangUnschedulable")
    _job("b-done", "beta", "team-b", users["lead"], phase="Completed", done=3)
    _job("b-cancel", "beta", "team-b", None, phase="Cancelled", failed=1)
    _job("o-run", "gamma", "other", users["staff"], phase="Running", running=1)
    return users


def _listed(response) -> list[str]:
    assert response.status_code == 200
    return re.findall(r'<tr data-job="([^"]+)"', response.content.decode())


def _cancellable(response) -> list[str]:
    return re.findall(r'data-cancel="([^"]+)"', response.content.decode())


@pytest.mark.parametrize(("query", "expected"), [
    ("", ALL),
    ("?state=waiting", ["alpha/a-inq", "alpha/a-wait"]),
    ("?state=Pending", ["alpha/a-wait"]),
    ("?state=Running", ["gamma/o-run", "alpha/a-run"]),
    ("?state=finished", ["beta/b-cancel", "beta/b-done"]),
    ("?state=Cancelled", ["beta/b-cancel"]),
    ("?state=Completed", ["beta/b-done"]),
    ("?queue=team-a", ["alpha/a-inq", "alpha/a-wait", "alpha/a-run"]),
    ("?namespace=beta", ["beta/b-cancel", "beta/b-done"]),
    ("?reason_code=NodeFit", ["alpha/a-wait"]),
    ("?submitted_by=submitter", ["alpha/a-wait", "alpha/a-run"]),
    ("?search=run", ["gamma/o-run", "alpha/a-run"]),
    ("?search=ALPHA", ["alpha/a-inq", "alpha/a-wait", "alpha/a-run"]),
    ("?queue=team-a&state=waiting&reason_code=GangUnschedulable", ["alpha/a-inq"]),
    ("?ordering=name", ["alpha/a-inq", "alpha/a-run", "alpha/a-wait", "beta/b-cancel", "beta/b-done",
                        "gamma/o-run"]),
    ("?ordering=created", list(reversed(ALL))),
    # Descending queue names (team-b, team-a, other), ties newest first.
    ("?ordering=-queue__name", ["beta/b-cancel", "beta/b-done", "alpha/a-inq", "alpha/a-wait", "alpha/a-run",
                                "gamma/o-run"]),
    # Ascending phases, ties oldest first.
    ("?ordering=phase", ["beta/b-cancel", "beta/b-done", "alpha/a-inq", "alpha/a-wait", "alpha/a-run",
                         "gamma/o-run"]),
    ("?search=nothing-like-it", []),
])
def test_job_list_filters_and_sorts(jobs, client_as, query, expected):
    assert _listed(client_as(jobs["viewer"]).get("/jobs/" + query)) == expected


def test_each_row_reads_its_state(jobs, client_as):
    html = client_as(jobs["viewer"]).get("/jobs/").content.decode()
    rows = dict(re.findall(r'<tr data-job="([^"]+)" data-phase="(\w+)"', html))
    assert rows == {"gamma/o-run": "Running", "beta/b-cancel": "Cancelled", "beta/b-done": "Completed",
                    "alpha/a-inq": "Inqueue", "alpha/a-wait": "Pending", "alpha/a-run": "Running"}
    row = html[html.index('data-job="alpha/a-run"'):].split("</tr>")[0]
    tasks_cell = ('<td data-label="Tasks running / all" class="num">2 / 3'
                  '<div class="small muted">1 waiting</div></td>')
    assert tasks_cell in row
    assert '<td data-label="Submitted by">submitter</td>' in row
    waiting = html[html.index('data-job="alpha/a-wait"'):].split("</tr>")[0]
    assert '<span class="reason" title="">No node fits</span>' in waiting
    done = html[html.index('data-job="beta/b-done"'):].split("</tr>")[0]
    assert re.search(r"completed <time [^>]*>2\xa0hours ago</time>: 3 succeeded, 0 failed", done)
    cancelled = html[html.index('data-job="beta/b-cancel"'):].split("</tr>")[0]
    assert '<td data-label="Submitted by">—</td>' in cancelled  # nobody submitted it (an import)
    assert re.search(r"cancelled <time [^>]*>2\xa0hours ago</time>: 0 succeeded, 1 failed", cancelled)
    # The filter form offers the leaf queues and the reasons the filterset accepts, by their labels.
    queue_select = html.split('name="queue"')[1].split("</select>")[0]
    assert re.findall(r'<option value="([\w-]+)">\1</option>', queue_select) == [
        "default", "other", "team-a", "team-b"]
    assert '<option value="NodeFit">No node fits</option>' in html


def test_state_tabs_count_the_other_filters_result(jobs, client_as):
    html = client_as(jobs["viewer"]).get("/jobs/?queue=team-a&state=waiting").content.decode()
    tabs = re.findall(r'data-state="(\w+)"( class="active"[^>]*)?>[^<]*<span class="count">(\d+)', html)
    assert [(state, bool(active), int(n)) for state, active, n in tabs] == [
        ("all", False, 3), ("waiting", True, 2), ("Running", False, 1), ("Completed", False, 0),
        ("Cancelled", False, 0)]
    assert 'href="?queue=team-a&amp;state=Running" data-state="Running"' in html  # keeps the queue


@pytest.mark.parametrize(("query", "listed", "error"), [
    # A filter naming nothing matches nothing; an unknown sort falls back to the default one.
    ("?state=bogus", [], "state: Select a valid choice. bogus is not one of the available choices."),
    ("?ordering=bogus", ALL, "ordering: unknown sort &#x27;bogus&#x27;; one of created, namespace, name, "
                             "queue__name, phase (a leading - reverses)."),
])
def test_bad_filters_are_reported(jobs, client_as, query, listed, error):
    response = client_as(jobs["viewer"]).get("/jobs/" + query)
    assert _listed(response) == listed
    assert f'<ul class="errorlist" id="filter-errors"><li>{error}</li></ul>' in response.content.decode()
    assert ('id="no-jobs">No job matches these filters.' in response.content.decode()) is (not listed)


def test_pages_keep_the_filters(jobs, client_as, monkeypatch):
    monkeypatch.setattr(job_lists, "PAGE_SIZE", 2)
    client = client_as(jobs["viewer"])
    first = client.get("/jobs/?namespace=alpha&ordering=name")
    assert _listed(first) == ["alpha/a-inq", "alpha/a-run"]
    html = first.content.decode()
    assert '<a href="?namespace=alpha&amp;ordering=name&amp;page=2" rel="next">' in html
    assert "3 jobs</span>, page 1 of 2" in html
    assert 'href="/api/v1/jobs/?namespace=alpha&amp;ordering=name&amp;limit=2&amp;offset=0"' in html
    second = client.get("/jobs/?namespace=alpha&ordering=name&page=2")
    assert _listed(second) == ["alpha/a-wait"]
    assert '<a href="?namespace=alpha&amp;ordering=name&amp;page=1" rel="prev">' in second.content.decode()
    bad_page = client.get("/jobs/?namespace=alpha&ordering=name&page=zzz")  # the first page
    assert _listed(bad_page) == ["alpha/a-inq", "alpha/a-run"]


def test_the_api_lists_the_same_jobs_for_the_same_query(jobs, client_as):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(jobs["viewer"])
    query = "?state=waiting&queue=team-a&ordering=name"
    body = api.get("/api/v1/jobs/" + query).json()
    assert [f"{j['namespace']}/{j['name']}" for j in body["results"]] == _listed(
        client_as(jobs["viewer"]).get("/jobs/" + query)) == ["alpha/a-inq", "alpha/a-wait"]


@pytest.mark.parametrize(("user", "expected"), [
    ("staff", ["gamma/o-run", "alpha/a-inq", "alpha/a-wait", "alpha/a-run"]),
    ("lead", ["alpha/a-inq", "alpha/a-wait", "alpha/a-run"]),  # admin of team: team-a's jobs
    ("submitter", ["alpha/a-wait", "alpha/a-run"]),  # their own, in a queue they submit to
    ("viewer", []),
])
def test_cancel_is_offered_to_whom_the_api_allows_it(jobs, client_as, user, expected):
    assert _cancellable(client_as(jobs[user]).get("/jobs/")) == expected


def test_my_jobs_lists_only_mine(jobs, client_as):
    client = client_as(jobs["submitter"])
    assert _listed(client.get("/jobs/mine/")) == ["alpha/a-wait", "alpha/a-run"]
    assert _listed(client.get("/jobs/mine/?submitted_by=lead")) == ["alpha/a-wait", "alpha/a-run"]
    assert _listed(client.get("/jobs/mine/?state=Running")) == ["alpha/a-run"]
    html = client.get("/jobs/mine/").content.decode()
    assert 'name="submitted_by"' not in html and "<th>Submitted by</th>" not in html
    empty = client_as(jobs["viewer"]).get("/jobs/mine/").content.decode()
    assert 'id="no-jobs">You have not submitted a job yet' in empty


def _cancel(client: Client, uid: str, **data):
    return client.post(f"/jobs/{uid}/cancel/", {"confirm": "yes", **data})


def test_submitter_cancels_own_job_after_confirming(jobs, client_as):
    client = client_as(jobs["submitter"])
    response = _cancel(client, "alpha/a-run", next="/jobs/mine/?state=Running")
    assert (response.status_code, response["Location"]) == (302, "/jobs/mine/?state=Running")
    job = Job.objects.get(name="a-run")
    assert job.phase == "Cancelled" and job.finished is not None
    assert sorted(job.tasks.values_list("name", "status")) == [
        ("a-run-r0", "Releasing"), ("a-run-r1", "Releasing"), ("a-run-w0", "Failed")]
    entry = AuditEntry.objects.get(object_key="alpha/a-run")
    assert (entry.action, entry.actor_name) == ("cancel", "submitter")
    page = client.get("/jobs/mine/").content.decode()
    assert ("Job alpha/a-run is Cancelled: its waiting tasks failed and its running tasks are being "
            "released.") in page
    assert 'data-job="alpha/a-run" data-phase="Cancelled"' in page
    assert _cancellable(client.get("/jobs/mine/")) == ["alpha/a-wait"]


@pytest.mark.parametrize(("user", "uid", "status", "phase"), [
    ("viewer", "alpha/a-run", 403, "Running"),
    ("lead", "gamma/o-run", 403, "Running"),  # not under the queue lead administers
    ("submitter", "alpha/a-inq", 403, "Inqueue"),  # staff's job, not theirs
    ("lead", "alpha/a-inq", 302, "Cancelled"),
    ("staff", "gamma/o-run", 302, "Cancelled"),
])
def test_cancel_follows_the_api_acl(jobs, client_as, user, uid, status, phase):
    response = _cancel(client_as(jobs[user]), uid)
    assert response.status_code == status
    assert Job.objects.get(name=uid.split("/")[1]).phase == phase


def test_cancel_needs_the_confirmation_a_post_and_a_csrf_token(jobs, client_as):
    client = client_as(jobs["staff"])
    response = client.post("/jobs/gamma/o-run/cancel/", {"next": "/jobs/"})
    assert (response.status_code, response["Location"]) == (302, "/jobs/")
    assert "the cancellation was not confirmed" in client.get("/jobs/").content.decode()
    assert client.get("/jobs/gamma/o-run/cancel/").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(jobs["staff"])
    assert strict.post("/jobs/gamma/o-run/cancel/", {"confirm": "yes"}).status_code == 403
    anonymous = Client().post("/jobs/gamma/o-run/cancel/", {"confirm": "yes"})
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert Job.objects.get(name="o-run").phase == "Running"
    assert client.post("/jobs/gamma/nope/cancel/", {"confirm": "yes"}).status_code == 404


@pytest.mark.parametrize("target", ["https://elsewhere.example/", "//elsewhere.example/jobs/", ""])
def test_cancel_never_redirects_off_site(jobs, client_as, target):
    response = _cancel(client_as(jobs["staff"]), "gamma/o-run", next=target)
    assert response["Location"] == "/jobs/gamma/o-run/"


def test_a_completed_job_cannot_be_cancelled(jobs, client_as):
    client = client_as(jobs["staff"])
    _cancel(client, "beta/b-done", next="/jobs/")
    assert Job.objects.get(name="b-done").phase == "Completed"
    assert "Job beta/b-done was not cancelled: Job beta/b-done has already completed." in (
        client.get("/jobs/").content.decode())


def test_job_actions_partial(jobs):
    request = RequestFactory().get("/jobs/alpha/a-run/")
    request.user = jobs["submitter"]
    job = Job.objects.select_related("queue").get(name="a-run")
    assert job_lists.can_cancel(request, job) is True
    html = render_to_string("dashboard/partials/job_actions.html", {"job": job, "can_cancel": True},
                            request=request)
    assert 'action="/jobs/alpha/a-run/cancel/"' in html and 'name="csrfmiddlewaretoken"' in html
    assert '<input type="hidden" name="next" value="/jobs/alpha/a-run/">' in html
    assert '<button type="submit" class="danger" name="confirm" value="yes">Yes, cancel it</button>' in html
    request.user = jobs["viewer"]
    assert job_lists.can_cancel(request, job) is False
    note = render_to_string("dashboard/partials/job_actions.html", {"job": job, "can_cancel": False},
                            request=request)
    assert "Only its submitter or an admin of queue team-a (or a parent) may cancel this job." in note
    done = Job.objects.select_related("queue").get(name="b-done")
    request.user = jobs["staff"]
    assert job_lists.can_cancel(request, done) is False
    assert render_to_string("dashboard/partials/job_actions.html", {"job": done, "can_cancel": False},
                            request=request).strip() == ""


def test_lists_need_sign_in_and_link_from_the_nav(jobs, client_as):
    for path in ("/jobs/", "/jobs/mine/"):
        response = Client().get(path)
        assert (response.status_code, response["Location"]) == (302, f"/accounts/login/?next={path}")
    html = client_as(jobs["viewer"]).get("/jobs/").content.decode()
    assert '<a href="/jobs/" class="active">Jobs</a>' in html
    assert '<a href="/jobs/mine/" >My jobs</a>' in html


def test_query_count_does_not_grow_with_the_jobs(jobs, client_as):
    client = client_as(jobs["staff"])
    client.get("/jobs/")  # warm the session
    with CaptureQueriesContext(connection) as few:
        client.get("/jobs/")
    queue = Queue.objects.get(name="team-b")
    for i in range(40):
        services.job_submit(namespace="load", name=f"j{i}", queue=queue, submitted_by=jobs["staff"],
                            tasks=[{"name": f"j{i}-0", "request": {"cpu": "1"}}])
    with CaptureQueriesContext(connection) as many:
        assert len(_listed(client.get("/jobs/"))) == 46
    assert len(many.captured_queries) == len(few.captured_queries)


def test_any_job_list_exports_as_csv_with_its_filters_and_order(jobs, client_as):
    client = client_as(jobs["staff"])
    response = client.get("/jobs/?namespace=beta&ordering=name&format=csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"] == 'attachment; filename="jobs.csv"'
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines[0][:9] == ["namespace", "name", "queue", "state", "tasks", "running", "waiting",
                            "succeeded", "failed"]
    assert [row[:9] for row in lines[1:]] == [
        ["beta", "b-cancel", "team-b", "Cancelled", "1", "0", "0", "0", "1"],
        ["beta", "b-done", "team-b", "Completed", "3", "0", "0", "3", "0"]]
    # The page links to the same list as CSV; "My jobs" exports only mine.
    page = client.get("/jobs/?namespace=beta").content.decode()
    assert 'href="?namespace=beta&amp;ordering=-created&amp;format=csv" id="csv-export"' in page
    mine = client_as(jobs["lead"]).get("/jobs/mine/?format=csv")
    assert [row[1] for row in list(csv.reader(io.StringIO(b"".join(mine.streaming_content).decode())))[1:]] \
        == ["b-done"]


def test_csv_cells_that_look_like_formulas_are_quoted():
    from schedweb.dashboard.job_csv import safe

    cells = ("=cmd()", "+1", "-2", "@x", "ok", 3)
    assert [safe(v) for v in cells] == ["'=cmd()", "'+1", "'-2", "'@x", "ok", 3]

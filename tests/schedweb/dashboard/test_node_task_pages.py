"""Every object reachable: the node page, job pages by id, the job's task table and outcome, the
queue page's job count and link, and times the browser can put in its own zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.template import Context, Template
from django.test import Client

from schedweb.core import services
from schedweb.core.models import Job, Node, Task, TaskStatus
from schedweb.dashboard import node_page, task_table


@pytest.fixture
def small(db) -> dict:
    """n1 (4 cpu, 8Gi, 3 pods, zone=a) holding 2 running tasks of ns/run; n2 tainted gpu; ns/wait
    waits for zone b; ns/big needs 16 cpu; ns/done ended (one task succeeded, one failed)."""
    user = get_user_model().objects.create_user("viewer", password="pw")
    services.queue_create(name="q")
    n1 = services.node_create(name="n1", allocatable={"cpu": "4", "memory": "8Gi", "pods": 3},
                              labels={"zone": "a"})
    services.node_create(name="n2", allocatable={"cpu": "8", "memory": "8Gi"},
                         taints=[{"key": "gpu", "value": "present", "effect": "NoSchedule"}])
    run = services.job_submit(namespace="ns", name="run", queue="q",
                              tasks=[{"name": "w", "replicas": 2, "request": {"cpu": "1", "memory": "1Gi"}}])
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    Task.objects.filter(job=run).update(status=TaskStatus.RUNNING, node=n1, started=t0)
    services.job_submit(namespace="ns", name="wait", queue="q",
                        tasks=[{"name": "a", "request": {"cpu": "1"}, "node_selector": {"zone": "b"}}])
    services.job_submit(namespace="ns", name="big", queue="q",
                        tasks=[{"name": "a", "request": {"cpu": "16"}}])
    done = services.job_submit(namespace="ns", name="done", queue="q",
                               tasks=[{"name": "ok", "request": {"cpu": "1"}},
                                      {"name": "bad", "request": {"cpu": "1"}}])
    Task.objects.filter(job=done, name="ok").update(status=TaskStatus.SUCCEEDED, started=t0,
                                                    finished=t0 + timedelta(seconds=90))
    Task.objects.filter(job=done, name="bad").update(status=TaskStatus.FAILED,
                                                     started=t0 + timedelta(seconds=30),
                                                     finished=t0 + timedelta(seconds=150))
    Job.objects.filter(pk=done.pk).update(phase="Completed", finished=t0 + timedelta(seconds=150))
    client = Client()
    client.force_login(user)
    return {"client": client, "run": run, "done": done, "t0": t0}


def _section(html: str, section_id: str) -> str:
    return html[html.index(f'id="{section_id}"'):].split("</section>")[0]


def test_the_node_page_shows_what_it_holds_its_tasks_and_why_waiting_jobs_pass_it_by(small):
    html = small["client"].get("/nodes/n1/").content.decode()
    figures = _section(html, "node-figures")
    assert re.search(r'data-dim="cpu"><td>CPU</td><td class="num">2 cores / 4 cores</td>', figures)
    assert '<td>Pods</td><td class="num">2 / 3</td>' in figures
    tasks = _section(html, "node-tasks")
    assert "(2)" in tasks
    assert tasks.count('<a href="/jobs/ns/run/">ns/run</a>') == 2
    waiting = _section(html, "node-waiting")
    # ns/wait (selector zone b) and ns/big (16 cpu) are checked; neither fits n1 now.
    assert "Of the 2 oldest waiting jobs" in waiting and "<strong>0</strong> have" in waiting
    assert re.findall(r'<td class="num">(\d+)</td><td>([^<]+)</td>', waiting) == [
        ("1", "node(s) didn&#x27;t match Pod&#x27;s node affinity/selector"),
        ("1", "Insufficient cpu (larger than the node)")]


def test_taints_and_pod_slots_are_among_the_reasons(small):
    n2 = Node.objects.get(name="n2")
    figures = node_page.node_figures(n2)
    assert node_page.shape_failures(n2, figures, {"request": {"cpu": 1000.0}}) == [
        "node(s) had untolerated taint {gpu: present}"]
    tolerated = {"request": {"cpu": 1000.0}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    assert node_page.shape_failures(n2, figures, tolerated) == []
    n1 = Node.objects.get(name="n1")
    Task.objects.filter(job__name="wait").update(status=TaskStatus.RUNNING, node=n1)  # 3 of 3 pods held
    full = node_page.node_figures(n1)
    assert full.tasks == 3
    assert node_page.shape_failures(n1, full, {"request": {"cpu": 500.0}}) == ["Too many pods"]


def test_unknown_node_is_a_404_and_node_links_reach_the_node_page(small):
    assert small["client"].get("/nodes/nope/").status_code == 404
    nodes = small["client"].get("/nodes/").content.decode()
    assert '<a href="/nodes/n1/">n1</a>' in nodes
    job = small["client"].get("/jobs/ns/run/").content.decode()
    assert '<a href="/nodes/n1/">n1</a>' in job
    assert "#node-" not in job


def test_a_job_page_by_id_is_the_job_page(small):
    response = small["client"].get(f"/jobs/{small['run'].pk}/")
    assert response.status_code == 302 and response["Location"] == "/jobs/ns/run/"
    assert small["client"].get("/jobs/999999/").status_code == 404


def test_the_job_page_lists_its_tasks_with_node_times_and_run_time(small):
    html = small["client"].get("/jobs/ns/done/").content.decode()
    tasks = _section(html, "tasks")
    assert "(2)" in tasks
    names = re.findall(r'<tr data-task="([^"]+)" data-status="([^"]+)">', tasks)
    assert names == [("bad", "Failed"), ("ok", "Succeeded")]
    ok = tasks[tasks.index('data-task="ok"'):].split("</tr>")[0]
    assert ('<time class="local" datetime="2026-01-01T12:00:00+00:00" data-format="">'
            '2026-01-01 12:00:00 UTC</time>') in ok
    assert f'<td data-label="Run time" class="num">{_seconds(90)}</td>' in ok
    outcome = re.search(r'<p id="outcome">(.*?)</p>', html, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", outcome) == (
        "1 succeeded, 1 failed; ran for " + _seconds(150) + " (first start to last finish).")


def _seconds(value: float) -> str:
    from schedweb.dashboard.templatetags.dashboard import seconds

    return seconds(value)


def test_the_task_table_is_paged(small, settings):
    job = services.job_submit(namespace="ns", name="many", queue="q",
                              tasks=[{"name": "w", "replicas": task_table.TASKS_PER_PAGE + 5,
                                      "request": {"cpu": "1"}}])
    page, rows = task_table.task_page(job, "2")
    assert page.number == 2 and len(rows) == 5 and page.paginator.count == task_table.TASKS_PER_PAGE + 5
    html = small["client"].get("/jobs/ns/many/?tasks=2").content.decode()
    assert 'page 2 of 2' in _section(html, "tasks")
    assert '<a href="?tasks=1#tasks">← previous</a>' in html
    # A malformed page number is the first page, never an error.
    assert small["client"].get("/jobs/ns/many/?tasks=x").status_code == 200


def test_outcome_counts_and_run_time(small):
    result = task_table.outcome(small["done"])
    assert (result.succeeded, result.failed, result.other, result.run_s) == (1, 1, 0, 150.0)
    assert task_table.outcome(small["run"]).run_s is None  # nothing finished


def test_the_queue_page_counts_its_jobs_and_links_to_the_full_list(small, monkeypatch):
    from schedweb.dashboard.views import queues

    monkeypatch.setattr(queues, "JOBS_SHOWN", 2)
    html = small["client"].get("/queues/q/").content.decode()
    assert '<span class="muted" id="jobs-count">(3 unfinished)</span>' in html
    more = re.search(r'<p class="small" id="jobs-more">(.*?)</p>', html, re.S).group(1)
    assert "The oldest 2 of 3 are shown" in more
    link = re.search(r'href="([^"]+)">all 3 in the job list', more).group(1).replace("&amp;", "&")
    # Every phase but the finished ones: a suspended (Aborted) job is unfinished too.
    assert link == "/jobs/?queue=q&state=Pending&state=Inqueue&state=Running&state=Unknown&state=Aborted"
    listed = small["client"].get(link).content.decode()
    assert '<span id="job-count">3 jobs</span>' in listed


def test_times_are_time_elements_in_utc_for_the_browser_to_localise():
    moment = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    out = Template('{% load times %}{{ t|when }}|{{ t|when:"time" }}|{{ none|when }}').render(
        Context({"t": moment, "none": None}))
    assert out == ('<time class="local" datetime="2026-03-04T05:06:07+00:00" data-format="">'
                   '2026-03-04 05:06:07 UTC</time>|<time class="local" datetime="2026-03-04T05:06:07+00:00" '
                   'data-format="time">05:06:07 UTC</time>|')
    two_hours = datetime.now(UTC) - timedelta(hours=2)
    rel = Template("{% load times %}{{ t|ago }}").render(Context({"t": two_hours}))
    assert re.fullmatch(r'<time class="local rel" datetime="[^"]+" title="[^"]+ UTC">2\xa0hours ago</time>',
                        rel)

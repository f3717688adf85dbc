"""The job page's task table (paginated), how a finished job's tasks ended, and the task counts
the job lists show.

A row per task: name, role, status, request (human units), node, started, finished and run time.
Tasks are listed in name order, `TASKS_PER_PAGE` at a time, so a job of 10,000 tasks costs one
page of rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, Min, Q

from schedweb.core.choices import TERMINAL_TASK_STATUSES, WAITING_TASK_STATUSES
from schedweb.core.models import Job, Task, TaskStatus
from schedweb.dashboard.units import fmt_map

TASKS_PER_PAGE = 50


@dataclass
class TaskRow:
    """One task as the table shows it."""

    name: str
    role: str
    status: str
    request: str
    node: str | None
    started: datetime | None
    finished: datetime | None
    run_s: float | None


@dataclass
class Outcome:
    """How a job's tasks ended: succeeded / failed counts and the job's run time (first start to
    last finish; None when no task ever started)."""

    succeeded: int
    failed: int
    other: int
    run_s: float | None


def task_page(job: Job, page_number: Any) -> tuple[Page, list[TaskRow]]:
    """The requested page of the job's tasks (an out-of-range or malformed number gives the last
    or first page, as Django's get_page does) and its rows."""
    tasks = (Task.objects.filter(job=job).select_related("node").order_by("name", "id")
             .only("name", "role", "status", "request", "node__name", "started", "finished"))
    page = Paginator(tasks, TASKS_PER_PAGE).get_page(page_number)
    rows = [TaskRow(name=t.name, role=t.role, status=t.status, request=fmt_map(t.request),
                    node=t.node.name if t.node_id else None, started=t.started, finished=t.finished,
                    run_s=_run_seconds(t.started, t.finished))
            for t in page.object_list]
    return page, rows


def outcome(job: Job) -> Outcome:
    """One aggregate query over the job's tasks."""
    agg = Task.objects.filter(job=job).aggregate(
        succeeded=Count("id", filter=Q(status=TaskStatus.SUCCEEDED)),
        failed=Count("id", filter=Q(status=TaskStatus.FAILED)),
        total=Count("id"), first=Min("started"), last=Max("finished"))
    other = agg["total"] - agg["succeeded"] - agg["failed"]
    return Outcome(succeeded=agg["succeeded"], failed=agg["failed"], other=other,
                   run_s=_run_seconds(agg["first"], agg["last"]))


def _run_seconds(started: datetime | None, finished: datetime | None) -> float | None:
    if started is None or finished is None or finished < started:
        return None
    return (finished - started).total_seconds()


def with_task_counts(jobs: list[Job]) -> list[Job]:
    """Set task_total / task_running / task_waiting / task_done (of which task_succeeded and
    task_failed) on a page of jobs (one query)."""
    rows = (Task.objects.filter(job_id__in=[j.id for j in jobs]).values("job_id")
            .annotate(total=Count("id"), running=Count("id", filter=Q(status=TaskStatus.RUNNING)),
                      waiting=Count("id", filter=Q(status__in=WAITING_TASK_STATUSES)),
                      done=Count("id", filter=Q(status__in=TERMINAL_TASK_STATUSES)),
                      succeeded=Count("id", filter=Q(status=TaskStatus.SUCCEEDED)),
                      failed=Count("id", filter=Q(status=TaskStatus.FAILED)))
            .order_by())
    counts = {row["job_id"]: row for row in rows}
    empty = {"total": 0, "running": 0, "waiting": 0, "done": 0, "succeeded": 0, "failed": 0}
    for job in jobs:
        row = counts.get(job.id) or empty
        job.task_total, job.task_running = row["total"], row["running"]
        job.task_waiting, job.task_done = row["waiting"], row["done"]
        job.task_succeeded, job.task_failed = row["succeeded"], row["failed"]
    return jobs

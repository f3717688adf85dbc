"""Pending-job reads: counts by reason, the filtered list, a job's place in its queue (queries;
the words for reasons are schedweb.dashboard.reason_text's)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce

from schedweb.core.choices import ALLOCATED_TASK_STATUSES, WAITING_JOB_PHASES, WAITING_TASK_STATUSES
from schedweb.core.models import Job, Task
from schedweb.dashboard.reason_text import reason_label


def waiting_jobs() -> QuerySet[Job]:
    """Jobs the scheduler still has to place: phase Pending/Inqueue with a task without a node."""
    has_waiting_task = Task.objects.filter(job=OuterRef("pk"), status__in=WAITING_TASK_STATUSES)
    return Job.objects.filter(Exists(has_waiting_task), phase__in=WAITING_JOB_PHASES)


def pending_by_reason() -> list[tuple[str, str, int]]:
    """(code, label, jobs) for every reason of waiting jobs: NeverFits first (those jobs need their
    submitter, not time), then most jobs first (one query)."""
    rows = (waiting_jobs().values("reason_code")
            .annotate(n=Count("id")).order_by("-n", "reason_code"))
    out = [(r["reason_code"], reason_label(r["reason_code"]), r["n"]) for r in rows]
    return sorted(out, key=lambda r: r[0] != "NeverFits")


def pending_jobs(*, queue_ids: Iterable[int] | None = None, reason: str | None = None) -> QuerySet[Job]:
    """Waiting jobs with their queue, task counts (total / ready) and priority, in queue order."""
    qs = waiting_jobs()
    if queue_ids is not None:
        qs = qs.filter(queue_id__in=list(queue_ids))
    if reason is not None:
        qs = qs.filter(reason_code=reason)
    return (qs.select_related("queue", "priority_class")
            .annotate(task_total=Count("tasks"),
                      task_ready=Count("tasks", filter=Q(tasks__status__in=ALLOCATED_TASK_STATUSES)),
                      prio=Coalesce(F("priority_class__value"), Value(0)),
                      never=Case(When(reason_code="NeverFits", then=Value(0)), default=Value(1),
                                 output_field=IntegerField()))
            .order_by("never", "queue__name", "-prio", "created", "id"))


def queue_position(job: Job) -> tuple[int, int]:
    """(1-based place, count) of the job among its queue's waiting jobs, in the order the
    scheduler's job order uses by default: priority (higher first), then submission time."""
    ids = list(pending_jobs(queue_ids=[job.queue_id]).order_by("-prio", "created", "id")
               .values_list("id", flat=True))
    if job.id not in ids:
        return 0, len(ids)
    return ids.index(job.id) + 1, len(ids)

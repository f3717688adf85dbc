"""Pending-job reads: counts by reason, the filtered list, a job's place in its queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce

from schedweb.core.choices import ALLOCATED_TASK_STATUSES, WAITING_JOB_PHASES, WAITING_TASK_STATUSES
from schedweb.core.models import Job, Task

# What each scheduler_core ReasonCode means, said to a team lead (first half of the sentence).
REASON_LABELS: dict[str, str] = {
    "NeverFits": "Can never run",
    "Deferred": "Deferred: too costly this cycle",
    "QueueClosed": "Queue closed",
    "InvalidJob": "Invalid job",
    "NotEnqueued": "Not admitted yet",
    "QueueOverCapability": "Queue at its capability",
    "QueueOverDeserved": "Queue at its deserved share",
    "GangUnschedulable": "Gang cannot start",
    "NodeFit": "No node fits",
    "WaitingForPreemption": "Waiting for preemption",
    "Unknown": "Unknown",
    "": "Not scheduled yet",
}
REASON_SENTENCES: dict[str, str] = {
    "NeverFits": "The job can never run as submitted, whatever else finishes",
    "Deferred": "Evaluating the job cost more than one job may in a scheduling cycle, so it was put off "
                "to the next cycle",
    "QueueClosed": "Its queue is closed, so it will not be scheduled until the queue is opened again",
    "InvalidJob": "The job is invalid and will never be scheduled as it is",
    "NotEnqueued": "The job has not been admitted: starting it would exceed a quota or the cluster's room",
    "QueueOverCapability": "Its queue (or a parent) has no room left under its hard limit",
    "QueueOverDeserved": "Its queue already uses its deserved share, and other queues need the rest",
    "GangUnschedulable": "Not enough of its tasks can start together to reach the gang's minimum",
    "NodeFit": "No node has room for its tasks right now",
    "WaitingForPreemption": "Room is being freed by evicting other tasks; it starts once they are gone",
    "Unknown": "The scheduler did not record a specific reason",
    "": "No scheduling cycle has looked at this job yet",
}


def reason_label(code: str) -> str:
    """A short label for a reason code (the code itself when unknown)."""
    return REASON_LABELS.get(code or "", code)


def reason_sentence(code: str, message: str) -> str:
    """One sentence: what the code means, then the scheduler's own numbers."""
    head = REASON_SENTENCES.get(code or "", f"Reason {code}")
    return f"{head}: {message}" if message else f"{head}."


def failure_summary(node_failures: Mapping[str, int] | None) -> str:
    """`12 Insufficient cpu, 8 node(s) had untolerated taint ...`: biggest count first."""
    items = sorted((node_failures or {}).items(), key=lambda kv: (-int(kv[1]), kv[0]))
    return ", ".join(f"{n} {reason}" for reason, n in items)


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


def row_sentence(code: str, message: str, details: Mapping[str, object] | None) -> str:
    """The one line a list row shows: NeverFits and quota reasons from their figures (human
    units), any other reason as the scheduler worded it."""
    from schedweb.dashboard.job_reason import never_fits_sentence, quota_sentence

    details = details if isinstance(details, Mapping) else {}
    if code == "NeverFits" and details.get("kind"):
        return never_fits_sentence(details, message)
    if code in ("QueueOverDeserved", "QueueOverCapability"):
        return quota_sentence(details) or message
    return message

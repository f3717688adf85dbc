"""Simulated node agent (SIMULATED_AGENT): plays kubelet for the demo, in set-based UPDATEs.

After each cycle: Binding/Bound tasks start Running; Running tasks with a duration succeed once it
has passed; Releasing tasks are gone after a grace period (a task of a live job comes back
Pending, like a pod its controller recreates; a cancelled job's task fails); jobs whose tasks are
all finished are Completed. After each step the loop has the nodes report their usage
(`report_heartbeats`: a heartbeat through `services.node_heartbeat` once per HEARTBEAT_SECONDS,
derived from the requests of the tasks running there, as a kubelet's status report carries it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from schedweb.core import services
from schedweb.core.models import (
    TERMINAL_JOB_PHASES,
    TERMINAL_TASK_STATUSES,
    Job,
    JobPhase,
    Node,
    Task,
    TaskStatus,
)
from schedweb.scheduling import writes

GRACE_PERIODS = 2  # Releasing tasks finish after this many schedule periods
# A node reports its usage this often, not every cycle: each report rewrites the node's row.
HEARTBEAT_SECONDS = 10.0
# Usage percent = IDLE + BUSY * (requested / allocatable) + jitter: tasks use most, not all,
# of what they request; the jitter (+-JITTER, from a hash of node and time) makes charts live.
USAGE_MODEL = {"cpu": (2.0, 85.0), "memory": (5.0, 75.0)}
JITTER = 3.0
AGENT_LOCK_KEY = 0x5C4ED_0003  # one simulated agent at a time, whichever instance runs it


@dataclass
class AgentStep:
    """What one agent step changed."""

    started: int = 0
    succeeded: int = 0
    released: int = 0
    completed_jobs: int = 0
    heartbeats: int = 0
    skipped: bool = False  # another instance's step held the agent lock


@transaction.atomic
def agent_step(*, now: datetime | None = None, period: float | None = None) -> AgentStep:
    """Advance simulated tasks and jobs to `now` (default: the current time).

    Decides first (one read), then locks the jobs of the tasks it will change, in id order,
    before changing any task: the project's lock order (see scheduling.writes.lock_jobs), so a
    cancel or a cycle running meanwhile waits instead of deadlocking.
    """
    now = now or timezone.now()
    period = settings.SCHEDULE_PERIOD if period is None else period
    step = AgentStep()
    if not writes.try_leader_lock(AGENT_LOCK_KEY):
        # Another scheduler instance (a shard) is stepping the same simulated kubelets: its step
        # does this one's work (every UPDATE re-checks what it decided from, so two would be safe,
        # only twice the reads).
        step.skipped = True
        return step
    expired_before = now - timedelta(seconds=GRACE_PERIODS * period)
    starting, done, released, jobs = [], [], [], set()
    # Durations are seconds: decide in Python over the (few) Binding, Bound, timed Running and
    # Releasing tasks. A Binding task starts now, so one with duration 0 also succeeds now.
    for pk, job_id, status, started, duration in Task.objects.filter(
            Q(status__in=(TaskStatus.BINDING, TaskStatus.BOUND))
            | Q(status=TaskStatus.RUNNING, duration__isnull=False, started__isnull=False)
            | Q(status=TaskStatus.RELEASING, updated__lte=expired_before)).values_list(
            "id", "job_id", "status", "started", "duration").order_by():
        if status == TaskStatus.RELEASING:
            released.append(pk)
        else:
            if status != TaskStatus.RUNNING:
                starting.append(pk)
                started = now
            if duration is not None and _ended(started, duration, now):
                done.append(pk)
            elif status == TaskStatus.RUNNING:
                continue  # nothing to do: its job needs no lock
        jobs.add(job_id)
    writes.lock_jobs(jobs)
    # Each UPDATE re-checks the status it decided from: a task changed meanwhile is left alone.
    step.started = _update(Task, starting, Q(status__in=(TaskStatus.BINDING, TaskStatus.BOUND)),
                           status=TaskStatus.RUNNING, started=now, updated=now)
    step.succeeded = _update(Task, done, Q(status=TaskStatus.RUNNING),
                             status=TaskStatus.SUCCEEDED, finished=now, updated=now)
    expired = Q(status=TaskStatus.RELEASING, updated__lte=expired_before)
    step.released = _update(Task, released, expired & Q(job__phase__in=TERMINAL_JOB_PHASES),
                            status=TaskStatus.FAILED, node=None, finished=now, updated=now)
    step.released += _update(Task, released, expired & ~Q(job__phase__in=TERMINAL_JOB_PHASES),
                             status=TaskStatus.PENDING, node=None, started=None, updated=now)
    # Jobs whose tasks have all finished. Another writer's job is skipped, never waited for (we
    # hold task locks now): it completes at the next step.
    unfinished = Task.objects.exclude(status__in=TERMINAL_TASK_STATUSES).values("job_id")
    complete = list(Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).filter(
        Exists(Task.objects.filter(job_id=OuterRef("pk")))).exclude(id__in=unfinished).select_for_update(
        skip_locked=True, no_key=True).values_list("id", flat=True))
    step.completed_jobs = _update(Job, complete, Q(), phase=JobPhase.COMPLETED, finished=now, updated=now)
    return step


def report_heartbeats(now: datetime) -> int:
    """Heartbeats of the nodes whose last report is HEARTBEAT_SECONDS old (or missing); returns
    how many reported. Two reads (nodes due, their Running tasks), then one service call each,
    each its own short transaction: the loop calls it after agent_step commits, so no job or
    task lock is held while a node row is written (a node delete locks the node, then its tasks)."""
    is_due = Q(usage_updated__isnull=True) | Q(usage_updated__lte=now - timedelta(seconds=HEARTBEAT_SECONDS))
    due = list(Node.objects.filter(is_due).order_by("name"))
    if not due:
        return 0
    requested: dict[int, dict[str, float]] = {node.pk: {"cpu": 0.0, "memory": 0.0} for node in due}
    due_ids = Node.objects.filter(is_due).values("pk")
    running = Task.objects.filter(status=TaskStatus.RUNNING, node__in=due_ids)
    for node_id, request in running.values_list("node_id", "request").order_by():
        if node_id not in requested:
            continue  # a node that reported in between
        for dim, total in requested[node_id].items():
            value = (request or {}).get(dim)
            if isinstance(value, int | float):
                requested[node_id][dim] = total + float(value)
    bucket = int(now.timestamp() // HEARTBEAT_SECONDS)
    reported = 0
    for node in due:
        usage = {dim: node_usage(node.name, dim, requested[node.pk][dim], node.allocatable.get(dim), bucket)
                 for dim in USAGE_MODEL}
        try:
            services.node_heartbeat(node=node, usage_cpu=usage["cpu"], usage_memory=usage["memory"], now=now)
        except DatabaseError:
            if Node.objects.filter(pk=node.pk).exists():
                raise
            continue  # deleted since it was read (the save "did not affect any rows")
        reported += 1
    return reported


def node_usage(node: str, dim: str, requested: float, allocatable: object, bucket: int) -> float:
    """A plausible usage percent of `dim` on `node` for the time `bucket`, within 0..100."""
    idle, busy = USAGE_MODEL[dim]
    fraction = requested / allocatable if isinstance(allocatable, int | float) and allocatable > 0 else 0.0
    digest = hashlib.sha256(f"{node}:{dim}:{bucket}".encode()).digest()
    jitter = (int.from_bytes(digest[:2], "big") / 65535 * 2 - 1) * JITTER
    return round(min(100.0, max(0.0, idle + busy * min(fraction, 1.0) + jitter)), 1)


def _ended(started: datetime, duration: float, now: datetime) -> bool:
    """The task's declared duration has passed; a duration beyond datetime's range (or not a
    number: stored before the input bounds existed) never ends, rather than failing every step."""
    try:
        return started + timedelta(seconds=duration) <= now
    except (OverflowError, ValueError):
        return False


def _update(model: type[Task] | type[Job], ids: list[int], condition: Q, **fields: object) -> int:
    """UPDATE the rows `ids` that still match `condition`, in chunks; returns rows changed."""
    return sum(model.objects.filter(condition, id__in=ids[i:i + writes.IN_CHUNK]).update(**fields)
               for i in range(0, len(ids), writes.IN_CHUNK))

"""Simulated node agent (SIMULATED_AGENT): plays kubelet for the demo, in set-based UPDATEs.

After each cycle: Binding/Bound tasks start Running; Running tasks with a duration succeed once it
has passed; Releasing tasks are gone after a grace period (a task of a live job comes back
Pending, like a pod its controller recreates; a cancelled job's task fails); jobs whose tasks are
all finished are Completed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from schedweb.core.models import TERMINAL_JOB_PHASES, TERMINAL_TASK_STATUSES, Job, JobPhase, Task, TaskStatus

GRACE_PERIODS = 2  # Releasing tasks finish after this many schedule periods


@dataclass
class AgentStep:
    """What one agent step changed."""

    started: int = 0
    succeeded: int = 0
    released: int = 0
    completed_jobs: int = 0


@transaction.atomic
def agent_step(*, now: datetime | None = None, period: float | None = None) -> AgentStep:
    """Advance simulated tasks and jobs to `now` (default: the current time)."""
    now = now or timezone.now()
    period = settings.SCHEDULE_PERIOD if period is None else period
    step = AgentStep()
    step.started = Task.objects.filter(status__in=(TaskStatus.BINDING, TaskStatus.BOUND)).update(
        status=TaskStatus.RUNNING, started=now, updated=now)
    # Durations are seconds: decide in Python over the (few) timed Running tasks, then one UPDATE.
    done = [pk for pk, started, duration in Task.objects.filter(
        status=TaskStatus.RUNNING, duration__isnull=False, started__isnull=False).values_list(
        "id", "started", "duration") if started + timedelta(seconds=duration) <= now]
    for i in range(0, len(done), 5000):
        step.succeeded += Task.objects.filter(id__in=done[i:i + 5000], status=TaskStatus.RUNNING).update(
            status=TaskStatus.SUCCEEDED, finished=now, updated=now)
    expired = Q(status=TaskStatus.RELEASING, updated__lte=now - timedelta(seconds=GRACE_PERIODS * period))
    step.released = Task.objects.filter(expired, job__phase__in=TERMINAL_JOB_PHASES).update(
        status=TaskStatus.FAILED, node=None, finished=now, updated=now)
    step.released += Task.objects.filter(expired).exclude(job__phase__in=TERMINAL_JOB_PHASES).update(
        status=TaskStatus.PENDING, node=None, started=None, updated=now)
    unfinished = Task.objects.exclude(status__in=TERMINAL_TASK_STATUSES).values("job_id")
    step.completed_jobs = Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).filter(
        tasks__isnull=False).exclude(id__in=unfinished).distinct().update(
        phase=JobPhase.COMPLETED, finished=now, updated=now)
    return step

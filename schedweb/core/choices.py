"""Sets of stored task statuses and job phases, each defined once (NetBox's choices.py).

Every page, API filter and read that shows or filters by one of these sets imports it from here.
The value enums (TaskStatus, JobPhase) are the models' column choices, in schedweb.core.models;
the sets the services use there (TERMINAL_TASK_STATUSES, NODE_BOUND_TASK_STATUSES,
TERMINAL_JOB_PHASES) are re-exported here, so every set has this one import path.
"""

from __future__ import annotations

from scheduler_core import model as scheduler_model
from schedweb.core.models import (
    NODE_BOUND_TASK_STATUSES,
    TERMINAL_JOB_PHASES,
    TERMINAL_TASK_STATUSES,
    JobPhase,
    TaskStatus,
)

__all__ = [
    "ALLOCATED_TASK_STATUSES", "JOB_PHASES", "JOB_STATE_GROUPS", "NODE_BOUND_TASK_STATUSES", "TASK_STATUSES",
    "TERMINAL_JOB_PHASES", "TERMINAL_TASK_STATUSES", "WAITING_JOB_PHASES", "WAITING_TASK_STATUSES",
]

# Every value, in lifecycle order (filter choices and per-status counts list them this way).
TASK_STATUSES: tuple[str, ...] = tuple(TaskStatus.values)
JOB_PHASES: tuple[str, ...] = tuple(JobPhase.values)

# Statuses counted as a queue's `allocated` and as a gang's ready tasks: the scheduler's own set
# (scheduler_core.model.ALLOCATED_STATUSES), in lifecycle order.
ALLOCATED_TASK_STATUSES: tuple[str, ...] = tuple(
    TaskStatus(s.value) for s in scheduler_model.TaskStatus if s in scheduler_model.ALLOCATED_STATUSES)
# Tasks still waiting for a node (a job whose tasks all got one is no longer waiting, even while
# its phase is still Inqueue until the next cycle).
WAITING_TASK_STATUSES: tuple[str, ...] = (TaskStatus.PENDING, TaskStatus.PIPELINED)

# Jobs not started yet: Pending, or admitted and Inqueue.
WAITING_JOB_PHASES: tuple[str, ...] = (JobPhase.PENDING, JobPhase.INQUEUE)
# `state` filter groups of phases (issue 19): waiting = not started yet, finished = terminal,
# suspended = Aborted (job_suspend). A phase name alone is a state too (`state=Running`).
JOB_STATE_GROUPS: dict[str, tuple[str, ...]] = {"waiting": WAITING_JOB_PHASES,
                                                "finished": TERMINAL_JOB_PHASES,
                                                "suspended": (JobPhase.ABORTED,)}

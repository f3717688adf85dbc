"""gang plugin: all-or-nothing scheduling of a job's min_member (Volcano's `gang`).

- valid: every role can still reach its minimum, and enough non-failed tasks exist for
  min_member (a min_member above the task count makes the job invalid);
- ready / pipelined: min_member (and per-role minimums) met by ready (or ready + pipelined) tasks;
- starving: ready + pipelined below min_member;
- victims: a job gives up tasks only while its ready count stays at or above min_member;
- job order: jobs that are not ready yet go first;
- session close: every job that is not ready gets a GangUnschedulable reason, and a PodGroup
  condition (`result.conditions`): not ready -> `Unschedulable` / `NotEnoughResources` with
  the gang sentence, ready -> `Scheduled`; except (upstream shouldSkipUnschedulableForReleasing)
  that a job on its way out of a preemption gets no Unschedulable: it has a Releasing task on a
  node, no Pending and no Pipelined task, and its Running, Bound, Failed and Succeeded tasks
  plus those Releasing tasks reach min_available.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Plugin, ValidateResult
from scheduler_core.framework.kept import OwnJobsReader
from scheduler_core.model import TaskStatus
from scheduler_core.result import (
    GANG_READY,
    NOT_ENOUGH_RESOURCES,
    SCHEDULED,
    UNSCHEDULABLE,
    PodGroupCondition,
)

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo

# Volcano's PodGroup condition reasons.
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_TASKS = "NotEnoughTasks"


def job_valid(job: JobInfo) -> ValidateResult | None:
    """Volcano's gang jobValid: per-role check first, then valid tasks against min_member."""
    if not job.check_task_valid():
        return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK,
                              "Not enough valid pods of each task for gang-scheduling")
    vtn = job.valid_task_num()
    if vtn < job.min_available:
        return ValidateResult(False, NOT_ENOUGH_TASKS,
                              f"Not enough valid tasks for gang-scheduling, valid: {vtn}, "
                              f"min: {job.min_available}")
    return None


def job_ready(job: JobInfo) -> bool:
    """Per-role minimums and min_member met by ready tasks."""
    return job.check_task_ready() and job.is_ready()


def job_pipelined(job: JobInfo) -> int:
    """Permit (1) when ready + pipelined tasks meet the gang, else reject (-1)."""
    return 1 if job.check_task_pipelined() and job.is_pipelined() else -1


def job_starving(job: JobInfo) -> bool:
    """Ready + pipelined tasks below min_member (preemption only looks at min_member)."""
    return job.is_starving()


def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
    """Not-ready jobs first; two ready or two not-ready jobs tie."""
    lr, rr = l.is_ready(), r.is_ready()
    if lr == rr:
        return 0
    return 1 if lr else -1


def _ready_key(job: JobInfo) -> bool:
    """Sort key of job_order: not-ready jobs (False) first."""
    return job.is_ready()


def gang_victims(ssn: Session, preemptees: list[TaskInfo]) -> list[TaskInfo]:
    """Candidates whose job keeps at least min_member ready tasks after losing them (in order)."""
    occupied: dict[str, int] = {}
    victims = []
    for t in preemptees:
        job = ssn.jobs[t.job_uid]
        left = occupied.get(job.uid)
        if left is None:
            left = job.ready_task_num()
        if left > job.min_available:
            left -= 1
            victims.append(t)
        occupied[job.uid] = left
    return victims


def gang_may_give(job: JobInfo) -> bool:
    """Victim job filter: a job at or below min_member ready tasks gives up none."""
    return job.ready_task_num() > job.min_available


def skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    """Upstream shouldSkipUnschedulableForReleasing: the job only waits for its own Releasing
    tasks to go (no Pending, no Pipelined task) and they, with the tasks that ran or run, reach
    min_available: an Unschedulable condition would be a false alarm."""
    releasing = sum(1 for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name)
    if not releasing or job.count(TaskStatus.PENDING) or job.count(TaskStatus.PIPELINED):
        return False
    scheduled = job.count(TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED)
    return scheduled + releasing >= job.min_available


class GangPlugin(Plugin):
    """Gang scheduling: validity, readiness, pipelining, starving, victims, reasons."""

    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        """Register the gang callbacks."""

        def victims(actor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return gang_victims(ssn, candidates), 1

        ssn.add_job_valid_fn(self.name, job_valid)
        ssn.add_preemptable_fn(self.name, victims, victim_job_filter=gang_may_give)
        ssn.add_reclaimable_fn(self.name, victims, victim_job_filter=gang_may_give)
        ssn.add_job_order_fn(self.name, job_order, key_fn=_ready_key)
        ssn.add_job_ready_fn(self.name, job_ready)
        ssn.add_job_pipelined_fn(self.name, job_pipelined)
        ssn.add_job_starving_fn(self.name, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        """For every job that is not ready: a GangUnschedulable reason (unless pipelined) and an
        Unschedulable condition (unless releasing); a ready job gets a Scheduled condition.

        With a kept snapshot that keeps answers (framework.kept), each job's _Close is kept with
        the job object, revision and minimum it was worked out from, and only the jobs the job
        table's change log names since the last close are looked at (`_KeptClose`)."""
        conditions = ssn.result.conditions
        scheduled = PodGroupCondition(SCHEDULED, GANG_READY, "", ssn.now)  # one value, shared
        keep = ssn.kept is not None and ssn.kept.keeps_answers()
        part = ssn.kept.part("gang_close", _KeptClose) if keep else _KeptClose()
        part.update(ssn.jobs, ssn.own_jobs, ssn.shard.foreign, self.name)
        conditions.update(dict.fromkeys(part.ready, scheduled))
        records, seen = ssn.reason_records, part.seen
        for uid in part.waiting:
            got = seen[uid]
            if not got.skip:
                condition = got.condition
                if condition is None or condition.transition_time != ssn.now:
                    condition = got.condition = PodGroupCondition(UNSCHEDULABLE, NOT_ENOUGH_RESOURCES,
                                                                  got.message, ssn.now)
                conditions[uid] = condition
            if got.record is not None:  # None: pipelined, the gang is met (WaitingForPreemption)
                records.setdefault(uid, []).append(got.record)  # as ssn.record_reason, one dict kept


class _KeptClose:
    """Each own job's _Close as the last close left it, split into ready and waiting uids; brought
    up to date from the job table's change log and the instance's foreign jobs
    (framework.kept.OwnJobsReader), else (first close, another table) by a walk of every own job."""

    def __init__(self) -> None:
        self.reader = OwnJobsReader()
        self.seen: dict[str, _Close] = {}
        self.ready: set[str] = set()
        self.waiting: set[str] = set()

    def update(self, jobs: dict[str, JobInfo], own: dict[str, JobInfo], foreign: frozenset[str],
               plugin: str) -> None:
        """Work out again the _Close of every job that changed (or all of them on a walk)."""
        changed, log, pos = self.reader.changed(jobs, foreign)
        if changed is None:
            self.seen, self.ready, self.waiting = {}, set(), set()
            visit: Iterable[str] = own
        else:
            visit = changed
        seen, ready, waiting = self.seen, self.ready, self.waiting
        for uid in visit:
            job = own.get(uid)
            if job is None:
                seen.pop(uid, None)
                ready.discard(uid)
                waiting.discard(uid)
                continue
            got = seen.get(uid)
            if got is None or got.job is not job or got.revision != job.revision \
                    or got.min_available != job.min_available:
                got = seen[uid] = _Close(job, plugin)
            if got.ready:
                ready.add(uid)
                waiting.discard(uid)
            else:
                waiting.add(uid)
                ready.discard(uid)
        self.reader.commit(log, pos)


class _Close:
    """What the gang close works out for one job from its tasks alone (a function of them)."""

    __slots__ = ("job", "revision", "min_available", "ready", "message", "skip", "record", "condition")

    def __init__(self, job: JobInfo, plugin: str) -> None:
        from scheduler_core.framework.records import ReasonCode, gang_message

        self.job, self.revision, self.min_available = job, job.revision, job.min_available
        self.ready = job.is_ready()
        self.message = ""
        self.record: dict[str, Any] | None = None
        self.condition: PodGroupCondition | None = None
        self.skip = False
        if self.ready:
            return
        self.message = gang_message(job)
        self.skip = skip_unschedulable_for_releasing(job)
        placed = job.ready_task_num() + job.waiting_task_num()
        if placed < job.min_available:
            self.record = {"code": ReasonCode.GangUnschedulable, "message": self.message, "plugin": plugin,
                           "details": {"min_available": job.min_available, "placed": placed,
                                       "tasks": len(job.tasks)}}

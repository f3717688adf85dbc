"""The own jobs that have tasks waiting, kept across sessions from the job table's change log.

At steady state most of a cluster's jobs run: of L's 23,000 jobs about 8,800 have a Pending task,
7,600 an unbound one and 3,500 are in phase Pending. allocate and backfill
(`actions.util.common.active_jobs`) look only at jobs with a Pending task, the close's reasons
(`explain.reasons.build_reasons`) only at jobs with an unbound one, enqueue only at Pending jobs;
walking every job for them cost four passes over the whole table per session.

`WaitingJobs` (a part of the snapshot's framework.kept state) keeps both sets of uids and brings
them up to date from the uids the table's change log names (scheduler_core.job_log: every task
added, removed, replaced or moved to another status bumps its job's revision and is logged), in
session too: allocate's placements are in the log when backfill and the close ask. A break in
the log (first session, another table) walks every own job, as a sharded instance does for the
jobs whose ownership moved (framework.kept.OwnJobsReader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.kept import OwnJobsReader
from scheduler_core.model import JobPhase, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo

_PENDING = TaskStatus.PENDING
_PHASE_PENDING = JobPhase.PENDING
_UNBOUND = (TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED)


class WaitingJobs:
    """Own jobs with a Pending task (`pending`), with a Pending, Pipelined or Allocated task
    (`unbound`, a superset: an Allocated task may be bound already) and in phase Pending
    (`admission`, enqueue's), as of the last `update`."""

    def __init__(self) -> None:
        self.reader = OwnJobsReader()
        self.pending: set[str] = set()
        self.unbound: set[str] = set()
        self.admission: set[str] = set()

    def update(self, ssn: Session) -> None:
        """Bring both sets up to the session's jobs now."""
        changed, log, pos = self.reader.changed(ssn.jobs, ssn.shard.foreign)
        own = ssn.own_jobs
        pending, unbound, admission = self.pending, self.unbound, self.admission
        if changed is None:
            pending.clear()
            unbound.clear()
            admission.clear()
            changed = own.keys()
        for uid in changed:
            job = own.get(uid)
            if job is None:
                pending.discard(uid)
                unbound.discard(uid)
                admission.discard(uid)
                continue
            if job.phase is _PHASE_PENDING:
                admission.add(uid)
            else:
                admission.discard(uid)
            idx = job.task_status_index
            if idx.get(_PENDING):
                pending.add(uid)
                unbound.add(uid)
                continue
            pending.discard(uid)
            if idx.get(_UNBOUND[1]) or idx.get(_UNBOUND[2]):
                unbound.add(uid)
            else:
                unbound.discard(uid)
        self.reader.commit(log, pos)

    def in_order(self, ssn: Session, uids: set[str]) -> list[JobInfo]:
        """The jobs of `uids` in the table's order (the order a walk of `ssn.own_jobs` gives)."""
        order = ssn.jobs.order  # type: ignore[attr-defined]  (a JobTable: see waiting_jobs)
        jobs = ssn.own_jobs
        return [jobs[uid] for uid in sorted(uids, key=order.__getitem__)]


def waiting_jobs(ssn: Session) -> WaitingJobs | None:
    """The session's index, up to date; None without a kept state or a logging job table (walk
    `ssn.own_jobs` then)."""
    if ssn.kept is None or not hasattr(ssn.jobs, "order"):
        return None
    part = ssn.kept.part("waiting_jobs", WaitingJobs)
    part.update(ssn)
    return part

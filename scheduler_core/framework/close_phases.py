"""The job phases a session's close gives (Volcano's jobStatus), kept across sessions.

`final_phase(job, placed_here)` is the rule: enough tasks occupying nodes (or done) -> Running,
all of them done -> Completed, else the job keeps Inqueue or Pending. Tasks placed in this
session do not count yet: the PodGroup turns Running in the cycle after its pods were bound.

`ClosePhases` (a part of the snapshot's framework.kept state) keeps each job's answer with what
it was computed from, the job object, its `revision`, the phase close gave it and its
min_available: `final_phase` is a fixed point of its own answer, so a job showing the same
values keeps it. The jobs to look at come from the job table's change log (scheduler_core.job_log):
those changed since the last close, plus the ones this session placed, instead of every job of
the cluster; a break in the log (first session, another table) or a sharded session, whose own
jobs are a subset of the table, walks every own job.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from scheduler_core.framework.kept import OwnJobsReader
from scheduler_core.model import JobPhase, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.model import JobInfo

_OCCUPYING = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING,
              TaskStatus.SUCCEEDED)


def final_phase(job: JobInfo, placed_here: int) -> JobPhase:
    """The phase close gives the job, `placed_here` of its tasks having been placed this session."""
    occupied = job.count(*_OCCUPYING) - placed_here
    if occupied >= job.min_available:
        if job.count(TaskStatus.SUCCEEDED) == occupied:
            return JobPhase.COMPLETED
        return JobPhase.RUNNING
    if job.phase is JobPhase.INQUEUE:
        return JobPhase.INQUEUE
    return JobPhase.PENDING


class ClosePhases:
    """Each own job's (job, revision, phase, phase text, min_available) as the last close left it,
    and the phase texts of all of them (`values`, the result's job_phase)."""

    def __init__(self) -> None:
        self.reader = OwnJobsReader()
        self.seen: dict[str, tuple[JobInfo, int, JobPhase, str, int]] = {}
        self.values: dict[str, str] = {}

    def close(self, jobs: dict[str, JobInfo], own: dict[str, JobInfo], placed_here: dict[str, int],
              foreign: frozenset[str] = frozenset()) -> dict[str, str]:
        """Set every own job's phase for this close (`own`: `jobs` less `foreign`); returns the
        phase texts of all own jobs (kept: read-only for the caller)."""
        changed, log, pos = self.reader.changed(jobs, foreign)
        if changed is None:  # a walk: start over (jobs gone leave no trace to follow)
            self.seen, self.values = {}, {}
            visit: Iterable[str] = list(own)
        else:
            visit = changed | placed_here.keys()
        seen, values = self.seen, self.values
        for uid in visit:
            job = own.get(uid)
            if job is None:
                seen.pop(uid, None)
                values.pop(uid, None)
                continue
            hit = seen.get(uid)
            if hit is None or hit[0] is not job or hit[1] != job.revision or hit[2] is not job.phase \
                    or hit[4] != job.min_available or uid in placed_here:
                job.phase = final_phase(job, placed_here.get(uid, 0))
                hit = seen[uid] = (job, job.revision, job.phase, job.phase.value, job.min_available)
                values[uid] = hit[3]
        # (The phases just set are in the log after `pos`: the next close looks at those jobs
        # once more and finds them as it left them.)
        self.reader.commit(log, pos)
        return values

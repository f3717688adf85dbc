"""The head of a job's pending tasks, kept per job revision (allocate's quick round).

Most waiting jobs are gangs of one kind of task: every pending non-best-effort task has the same
`sched_key`, so allocate's round would try the first of them (in task order) and, when that kind
fits no node, skip the rest. `PendingHeads.head(job)` gives that first task, or None when the
job's pending tasks are of several kinds (or none); the answer is kept with the job object and
its `revision` (bumped by every task change), so an unchanged job costs a lookup per session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.task_fallback import first_task
from scheduler_core.model import TaskStatus

if TYPE_CHECKING:
    from scheduler_core.model import JobInfo, TaskInfo


class PendingHeads:
    """Per job uid: (job, revision, head task or None)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[JobInfo, int, TaskInfo | None]] = {}

    def head(self, job: JobInfo) -> TaskInfo | None:
        """The first pending non-best-effort task in task order when all of them are one kind."""
        hit = self._known.get(job.uid)
        if hit is not None and hit[0] is job and hit[1] == job.revision:
            return hit[2]
        got = _single_kind_head(job)
        self._known[job.uid] = (job, job.revision, got)
        return got

    def prune(self, live: dict[str, JobInfo]) -> None:
        """Forget jobs no longer in the snapshot (once the table has grown past twice their number)."""
        if len(self._known) > 2 * len(live) + 64:
            self._known = {uid: hit for uid, hit in self._known.items() if live.get(uid) is hit[0]}


def _single_kind_head(job: JobInfo) -> TaskInfo | None:
    tasks = [t for t in job.task_status_index.get(TaskStatus.PENDING, {}).values() if not t.best_effort]
    if not tasks:
        return None
    key = tasks[0].sched_key
    if any(t.sched_key != key for t in tasks):
        return None
    # One kind: TaskList orders it by the session fallback alone (actions.util.ordering).
    return tasks[0] if len(tasks) == 1 else first_task(tasks)

"""backfill: place best-effort tasks (empty request) of admitted jobs (Volcano's backfill).

Tasks are taken queue by queue (queue order), job by job (job order), task by task (task
order), like Volcano's pickUpPendingTasks. A task goes straight to the session (no
statement, as Volcano's ssn.Allocate): to the best-scoring node whose predicates pass, ties
to the name that sorts first. Best-effort tasks need no resources, only a free pod slot.
(A job's placements go through a statement committed at once, so that a job whose evaluation
raises is undone and set aside; decisions are those of direct allocation.) A task
no node accepts records its fit errors; identical tasks of the same job then fail alike and
are skipped. The session binds the allocated tasks at close when their job is ready.
The feasible-node search limit applies (`framework.node_search`): the predicate pass keeps the
first K feasible nodes from the rotating index, and only those are scored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.actions.util.common import active_jobs
from scheduler_core.actions.util.ordering import KeyedQueue, PriorityQueue, order_queue, sorted_tasks
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import guard
from scheduler_core.framework.records import FitErrors

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo, TaskInfo


class BackfillAction(Action):
    """Place best-effort tasks on any node whose predicates pass."""

    name = "backfill"

    def execute(self, ssn: Session) -> None:
        """Place every pending best-effort task of non-Pending valid jobs."""
        names = ssn.node_table.names
        recorder = ssn.score_recorder  # per-node score recording (scheduler_core.explain.node_scores)
        for job, tasks in self._pending(ssn):
            failed: set[tuple] = set()
            # A statement only so that a job whose evaluation fails leaves nothing placed.
            with guard(ssn, job, self.name) as scope:
                stmt = scope.statement()
                for task in tasks:
                    if task.sched_key in failed:
                        continue
                    pred = ssn.predicate(task)
                    # A pod slot is part of the fit test even without the predicates plugin.
                    ok = pred.ok_mask & (ssn.node_table.slots() >= 1)
                    feasible = ssn.node_search.take(ok)
                    if recorder is not None:
                        recorder.record_mask(task, self.name, feasible)
                    row = ssn.best_node(task, feasible)
                    if row is None:
                        failed.add(task.sched_key)
                        counts = pred.counts()
                        full = int((pred.ok_mask & ~ok).sum())
                        if full:
                            counts["Insufficient pods"] = full
                        ssn.record_fit_errors(job.uid, task.uid, FitErrors(len(names), counts))
                        continue
                    stmt.allocate(task, names[row])
                stmt.commit()

    @staticmethod
    def _pending(ssn: Session) -> list[tuple[JobInfo, list[TaskInfo]]]:
        """(job, best-effort pending tasks in task order) in queue order, then job order."""
        # Every heap is filled before anything is placed (and best-effort tasks move no share),
        # so sort keys give the comparators' order; else the comparator in one closure.
        job_key = ssn.job_order_key()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo] | KeyedQueue[JobInfo]] = {}
        order: list[QueueInfo] = []
        for job in active_jobs(ssn, with_pending_tasks=True):
            if not job.pending_best_effort_task_num():
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = order_queue(job_key, ssn.job_order_fn)
                order.append(ssn.queues[job.queue])
            jobs_by_queue[job.queue].push(job)
        queues = order_queue(ssn.queue_order_key() or ssn.queue_order_static_key(order), ssn.queue_less())
        for queue in order:
            queues.push(queue)
        out = []
        while queues:
            jobs = jobs_by_queue[queues.pop().name]
            while jobs:
                job = jobs.pop()
                out.append((job, sorted_tasks(ssn, (t for t in job.pending_tasks() if t.best_effort))))
        return out

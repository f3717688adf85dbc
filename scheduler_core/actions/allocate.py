"""allocate: place pending tasks on nodes, queue by queue, job by job (Volcano's allocate).

Choices (Volcano v1.1x unless the semantics page says otherwise):
- When `enqueue` is not a configured action, Pending jobs are moved to Inqueue first.
- Queues pop in queue order and are pushed back after each job (re-ordered by their new
  share); an overused queue is dropped for the rest of the action. Jobs pop in job order.
- A job's pending non-best-effort tasks are tried in task order inside one Statement. A task
  whose queue is not `allocatable` (or not Open, even without a queue plugin: QueueClosed)
  is skipped for this session, with a queue reason unless the queue plugin gave one.
  Nodes: predicates, then the idle fit (allocate) or else the future-idle fit (pipeline),
  best score, ties to the name that sorts first. A task that fits no node records its fit errors and marks its
  equivalence class failed (identical tasks fail identically, Volcano's TaskHasFitErrors);
  other classes go on unless the gang can no longer reach min_available.
- When the job becomes ready and tasks remain, it is pushed back and the round ends
  (other jobs get a turn). End of a round: ready -> commit; else pipelined -> keep (the
  allocated tasks wait, reason WaitingForPreemption); else discard.
Speed: the masks and scores of each equivalence class live for the whole action
(`_placement.ClassState`) and catch up through a log of changed rows, so a placement costs
one row update, not a pass over all nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.actions._common import active_jobs, record_queue_refusal, record_waiting
from scheduler_core.actions._ordering import KeyedQueue, PriorityQueue, TaskList, order_queue
from scheduler_core.actions._placement import ChangeLog, ClassState, has_dynamic_predicates, spreads
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import guard
from scheduler_core.framework.registry import register_action
from scheduler_core.model import JobPhase, QueueState, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import JobInfo, QueueInfo
    from scheduler_core.reasons import FitErrors


@register_action("allocate")
class AllocateAction(Action):
    """Place pending tasks onto idle (or future idle) node resources."""

    def execute(self, ssn: Session) -> None:
        """Run allocate over every valid, admitted job."""
        if "enqueue" not in ssn.conf.actions:
            # Without enqueue nobody admits jobs: do it here so they are not stuck.
            for job in ssn.jobs.values():
                if job.phase is JobPhase.PENDING:
                    job.phase = JobPhase.INQUEUE
        # Sort keys instead of comparator calls when every order plugin offers one: here only
        # the popped job (queue) changes, and it is re-keyed when pushed back.
        queue_key, job_key = ssn.queue_order_key(), ssn.job_order_key()
        queues = order_queue(queue_key, ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo] | KeyedQueue[JobInfo]] = {}
        for job in active_jobs(ssn):
            if not job.count(TaskStatus.PENDING):
                # Nothing to place: its turn would change no state and record nothing.
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = order_queue(job_key, ssn.job_order_fn)
                queues.push(ssn.queues[job.queue])
            jobs_by_queue[job.queue].push(job)
        self._dynamic = has_dynamic_predicates(ssn)
        # Class states live for the whole action; the change log lets them catch up.
        self._log = ChangeLog()
        self._states: dict[tuple, ClassState] = {}
        # Class (or twin) key -> (change-log length, fit errors) of its latest failure.
        self._failed: dict[tuple, tuple[int, FitErrors]] = {}
        pending: dict[str, TaskList] = {}
        failed: dict[str, set[tuple]] = {}
        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue.name]
            if ssn.overused(queue):
                # Dropped for the rest of the action, as Volcano does; tell the waiting jobs why.
                while jobs:
                    job = jobs.pop()
                    if job.count(TaskStatus.PENDING):
                        record_queue_refusal(ssn, self.name, job, queue, overused=True)
                continue
            if not jobs:
                continue
            job = jobs.pop()
            if job.uid in ssn.quarantined:  # set aside by a failure earlier in the session
                queues.push(queue)
                continue
            with guard(ssn, job, self.name, on_failure=self._forget_undone) as scope:
                tasks = pending.get(job.uid)
                if tasks is None:
                    tasks = TaskList(ssn, (t for t in job.pending_tasks() if not t.best_effort))
                    pending[job.uid] = tasks
                    failed[job.uid] = set()
                if tasks:
                    self._allocate_job(ssn, scope.statement(), queue, job, tasks, jobs, failed[job.uid])
            queues.push(queue)

    def _forget_undone(self) -> None:
        """A failed job's placements were undone: every cached class state refreshes."""
        self._log.add(ChangeLog.ALL)

    def _allocate_job(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, tasks: TaskList,
                      jobs: PriorityQueue[JobInfo] | KeyedQueue[JobInfo], failed: set[tuple]) -> None:
        """One round of a job: try its tasks in one statement, then commit, keep or discard."""
        states, log = self._states, self._log
        names = ssn.node_table.names
        refused = False
        while tasks:
            task = tasks.pop()
            key = task.sched_key
            if key in failed:
                continue
            if queue.state is not QueueState.OPEN or not ssn.allocatable(queue, task):
                if not refused:
                    record_queue_refusal(ssn, self.name, job, queue, overused=False)
                    refused = True
                continue
            # Twin classes (same key but pod labels and priority, when nothing reads those)
            # answer identically in every state: they share one ClassState.
            twin = log.twin_key(ssn, task)
            state_key = twin if twin is not None else key
            # A class that fitted nowhere, asked again with nothing placed or released since,
            # gets the same answer without touching its arrays.
            known = self._failed.get(state_key)
            if known is not None and known[0] == len(log.rows):
                choice, state = None, None
            else:
                known = None
                state = states.get(state_key)
                if state is None:
                    state = states[state_key] = ClassState(ssn, task, self._dynamic, log)
                else:
                    state.catch_up(log)
                choice = state.best()
            if choice is None:
                failed.add(key)
                if known is None:
                    known = self._failed[state_key] = (len(log.rows), state.errors())
                ssn.record_fit_errors(job.uid, task.uid, known[1])
                reachable = (job.ready_task_num() + job.waiting_task_num()
                             + job.pending_best_effort_task_num() + tasks.remaining_outside(failed))
                if reachable < job.min_available and not ssn.job_ready(job):
                    break  # the gang cannot be met any more this round
                continue
            row, future = choice
            if future:
                stmt.pipeline(task, names[row])
            else:
                stmt.allocate(task, names[row])
            log.add(ChangeLog.ALL if spreads(task) else row)
            state.catch_up(log)
            if ssn.job_ready(job) and tasks:
                jobs.push(job)
                break
        if ssn.job_ready(job):
            stmt.commit()
        elif ssn.job_pipelined(job):
            record_waiting(ssn, self.name, job)
        else:
            for op in stmt.operations:
                if op.task.node_name is not None:
                    log.add(ssn.node_table.index[op.task.node_name], released=True)
            stmt.discard()

"""allocate: place pending tasks on nodes, queue by queue, job by job (Volcano's allocate.go).

The stages, as in Volcano:
1. pick queue: queues pop in queue order and are pushed back after each job (re-ordered by
   their new share); an overused queue is dropped for the rest of the action. When `enqueue`
   is not a configured action, Pending jobs are moved to Inqueue first.
2. pick job: the queue's jobs pop in job order; each job's round runs under
   `framework.isolation.guard` (a failure sets the job aside and undoes its round).
3. pick task: the job's pending non-best-effort tasks, in task order, in one Statement. A task
   whose queue is not `allocatable` (or not Open, even without a queue plugin: QueueClosed) is
   skipped for this session, with a queue reason unless the queue plugin gave one.
4. predicate and 5. score: `Placer.best(task)`, the nodes passing the predicates, those whose
   idle fits before those where only the future idle fits (pipelining), best score, ties to the
   name that sorts first. A task that fits no node records its fit errors and marks its kind
   (`sched_key`) failed for the job (identical tasks fail identically, Volcano's
   TaskHasFitErrors); other kinds go on unless the gang can no longer reach min_available.
6. allocate / pipeline: on the chosen node, through the Statement. When the job becomes ready
   and tasks remain, it is pushed back and the round ends (other jobs get a turn).
   Runs: when a task goes to the same node as the task before it in the round (or its class's
   latest run was longer than one) and the tasks after it are identical (same sched_key),
   `Placer.run_length` says how many of them would
   choose that node one after another (bounded by `allocatable_count`: the queue) and they are
   placed in one step (`Statement.place_run`), stopping where the job becomes ready: the same
   decisions as one by one, in fewer steps (job-ready callbacks read the job, not the figures
   event handlers keep).
7. commit / discard, at the end of a round: ready -> commit; else pipelined -> keep (the
   allocated tasks wait, reason WaitingForPreemption); else discard.
Every speed-up (per-class state, change log, failure memo) lives behind `placer.Placer`.
A job's first round takes a quick path when its pending tasks are all of one kind and the
Placer's failure memo already says that kind fits nowhere (`_quick_round`): the same calls in the
same order as the full round (queue check, the memoised `best`, its fit errors,
step 7), without ordering its tasks or opening a statement. In a steady cluster most waiting jobs
are such gangs, and this is their whole round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.actions.allocate.heads import PendingHeads
from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.actions.util.common import active_jobs, record_queue_refusal, record_waiting
from scheduler_core.actions.util.ordering import KeyedQueue, PriorityQueue, TaskList, order_queue
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import guard
from scheduler_core.model import JobPhase, QueueState, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import JobInfo, QueueInfo


class AllocateAction(Action):
    """Place pending tasks onto idle (or future idle) node resources."""

    name = "allocate"

    # Place runs of identical tasks in one step (tests turn it off to compare with one by one).
    runs: bool = True
    # Take `_quick_round` when it applies (tests turn it off to compare with the full round).
    quick: bool = True

    def execute(self, ssn: Session) -> None:
        """Run allocate over every valid, admitted job."""
        if "enqueue" not in ssn.conf.actions:
            # Without enqueue nobody admits jobs: do it here so they are not stuck.
            for job in ssn.own_jobs.values():
                if job.phase is JobPhase.PENDING:
                    job.phase = JobPhase.INQUEUE
        # Sort keys instead of comparator calls when every order plugin offers one that holds
        # here: only the popped job (queue) changes, and it is re-keyed when pushed back.
        job_key = ssn.job_order_key()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo] | KeyedQueue[JobInfo]] = {}
        order: list[QueueInfo] = []  # queues in the order the comparator heap is filled
        for job in active_jobs(ssn, with_pending_tasks=True):
            if not job.count(TaskStatus.PENDING):
                # Nothing to place: its turn would change no state and record nothing.
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = order_queue(job_key, ssn.job_order_fn)
                order.append(ssn.queues[job.queue])
            jobs_by_queue[job.queue].push(job)
        queue_key = ssn.queue_order_key() or ssn.queue_order_static_key(order, moving=True)
        queues = order_queue(queue_key, ssn.queue_less())
        for queue in order:
            queues.push(queue)
        self._placer = Placer(ssn)
        heads = ssn.kept.part("allocate.heads", PendingHeads) if ssn.kept is not None else PendingHeads()
        heads.prune(ssn.jobs)
        pending: dict[str, TaskList] = {}
        failed: dict[str, set[tuple]] = {}
        while queues:
            queue = queues.pop()  # 1. pick queue
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
            job = jobs.pop()  # 2. pick job
            if job.uid in ssn.quarantined:  # set aside by a failure earlier in the session
                queues.push(queue)
                continue
            # A failed round is undone by the guard; the Placer then forgets what it cached.
            with guard(ssn, job, self.name, on_failure=self._placer.forget,
                       on_defer=self._placer.deferred) as scope:
                tasks = pending.get(job.uid)
                if tasks is None:
                    if self._quick_round(ssn, queue, job, heads.head(job)):
                        queues.push(queue)
                        continue  # its round ended: the job is not pushed back
                    tasks = TaskList(ssn, (t for t in job.pending_tasks() if not t.best_effort))
                    pending[job.uid] = tasks
                    failed[job.uid] = set()
                if tasks:
                    self._allocate_job(ssn, scope.statement(), queue, job, tasks, jobs, failed[job.uid])
            queues.push(queue)

    def _allocate_job(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, tasks: TaskList,
                      jobs: PriorityQueue[JobInfo] | KeyedQueue[JobInfo], failed: set[tuple]) -> None:
        """One round of a job: try its tasks in one statement, then commit, keep or discard."""
        placer, names = self._placer, ssn.node_table.names
        refused = False
        # Kinds the queue refused this round: the queue's room only shrinks within a round and
        # the queue plugins read only the request, so an identical task is refused again (and
        # its reason is recorded once): skip it without asking, as a gang's refused tail is
        # otherwise asked task by task at every cycle.
        refused_kinds: set[tuple] = set()
        last_row, last_key = -1, None  # where the round's previous task went, and its kind
        while tasks:
            task = tasks.pop()  # 3. pick task
            if task.sched_key in failed or task.sched_key in refused_kinds:
                continue
            if queue.state is not QueueState.OPEN or not ssn.allocatable(queue, task):
                if not refused:
                    record_queue_refusal(ssn, self.name, job, queue, overused=False)
                    refused = True
                refused_kinds.add(task.sched_key)
                if not tasks.remaining_outside(failed | refused_kinds):
                    break  # every task left would be skipped
                continue
            choice = placer.best(task)  # 4. predicate, 5. score
            if choice is None:
                failed.add(task.sched_key)
                ssn.record_fit_errors(job.uid, task.uid, placer.fit_errors(task))
                reachable = (job.ready_task_num() + job.waiting_task_num()
                             + job.pending_best_effort_task_num() + tasks.remaining_outside(failed))
                if reachable < job.min_available and not ssn.job_ready(job):
                    break  # the gang cannot be met any more this round
                continue
            row, pipelined = choice  # 6. allocate / pipeline
            count = 1
            if pipelined:
                stmt.pipeline(task, names[row])
            elif self.runs and tasks and (placer.expects_run(task) or (
                    row == last_row and task.sched_key == last_key)) and not ssn.job_ready(job):
                # (A job already ready takes one task per round: no run.)
                count = self._run(ssn, stmt, queue, job, tasks, task, row)
            else:
                stmt.allocate(task, names[row])
            placer.placed(task, row, count)
            last_row, last_key = row, task.sched_key
            if ssn.job_ready(job) and tasks:
                jobs.push(job)
                break
        # 7. commit / discard
        if ssn.job_ready(job):
            stmt.commit()
        elif ssn.job_pipelined(job):
            record_waiting(ssn, self.name, job)
        else:
            placer.released(stmt.placed_tasks())
            stmt.discard()

    def _quick_round(self, ssn: Session, queue: QueueInfo, job: JobInfo, head: TaskInfo | None) -> bool:
        """The job's whole first round when `head` (its first pending task, every pending task
        being of its kind) is refused or fits nowhere by the memo; False (nothing done) otherwise.
        The calls with an effect are `_allocate_job`'s for that case: the rest would be skipped."""
        placer = self._placer
        if head is None or not self.quick or not placer.known_failure(head):
            return False
        if queue.state is not QueueState.OPEN or not ssn.allocatable(queue, head):
            record_queue_refusal(ssn, self.name, job, queue, overused=False)
        else:
            placer.best(head)  # None, from the memo (a recorded empty try when scores are kept)
            ssn.record_fit_errors(job.uid, head.uid, placer.fit_errors(head))
            # (The full round's gang check only decides whether it stops or skips the rest.)
        if not ssn.job_ready(job) and ssn.job_pipelined(job):
            record_waiting(ssn, self.name, job)
        return True

    def _run(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, tasks: TaskList,
             task: TaskInfo, row: int) -> int:
        """Allocate `task` on `row` with the identical tasks after it that would go there too;
        returns how many were placed."""
        twins = tasks.identical_after(task)
        count = self._placer.run_length(task, row, 1 + len(twins),
                                        lambda k: ssn.allocatable_count(queue, task, k)) if twins else 1
        if count == 1:
            stmt.allocate(task, ssn.node_table.names[row])
            return 1
        left = len(tasks)  # tasks after `task`

        def stop(j: int) -> bool:
            # One by one, the round ends after the j-th task when the job is ready and tasks remain.
            return j < count and left - (j - 1) > 0 and ssn.job_ready(job)

        placed = stmt.place_run([task, *twins[:count - 1]], ssn.node_table.names[row], stop=stop)
        for _ in range(placed - 1):
            tasks.pop()
        return placed

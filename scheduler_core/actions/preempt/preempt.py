"""preempt: starving jobs take resources from lower-priority work of their own queue (counting
Volcano's preemption attempts in the result: one per node tried with validated victims).

Volcano v1.1x preempt, with these choices:
- Preemptors: pending tasks of valid, non-Pending, starving jobs (`job_starving`), in task
  order; tasks with `preemption_policy: Never` never preempt. Queues are visited in queue
  order (Volcano walks a map).
- Between jobs of one queue: starving jobs pop in job order; each gets one statement. For a
  preemptor, candidate nodes (`victim_nodes.NodeCheck`: only failures eviction cannot fix
  exclude a node) are tried best score first (ties: name first); candidates are Running,
  preemptable tasks of *other* jobs of the same queue (best-effort ones included; a
  best-effort preemptor only takes best-effort ones), offered in victim order (Volcano: node
  map order) so that plugins with a budget (gang keeps min_member) spend it on the
  lowest-priority tasks; `preemptable` callbacks pick victims; when future idle plus all
  victims (their pod slots included) cannot fit the preemptor the node is skipped; otherwise
  victims are evicted in victim order until the queue is `allocatable` for the preemptor, it
  fits the node's future idle with a free pod slot (even without the predicates plugin) and
  the node's fixable predicates pass (pod count, anti-affinity, spread, with the
  evicted tasks gone), and it is pipelined there. When every victim is evicted and it still
  does not fit, that node's evictions are undone before the next node is tried. After
  the job's tasks: commit when `job_pipelined`, else discard; a job that got something is
  pushed back to try again.
- Inside a job: each starving job's pending tasks may evict the same job's Running tasks
  (victims chosen by the `preemptable` callbacks, e.g. by task priority); one statement per
  preemptor, committed when the preemptor was pipelined and discarded otherwise (Volcano
  commits even then, keeping evictions that helped nobody, e.g. when the queue's quota still
  refuses the preemptor); the job stops at its first preemptor that gets nothing.
- Finally the `victim_tasks` callbacks' tasks are evicted (Volcano's victimTasks).
- With `enableTopologyAwarePreemption: true` each preemptor's try (between jobs and inside a
  job) takes the topology-aware path instead (`preempt_topology`: dry runs, minimal victim
  sets, no node scores).
Evicted tasks become Releasing (listed in the result's evictions); preemptors are pipelined.
Speed (same decisions): nodes whose possible victims cannot fit the task are skipped without
asking the plugins (`victim_capacity.VictimCapacity`), and a try that failed without changing
anything is not repeated for a task of the same class until the session changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.actions.preempt.topology import TopologyPreempt, topology_options
from scheduler_core.actions.util.common import active_jobs, record_waiting
from scheduler_core.actions.util.ordering import PriorityQueue, TaskList, job_queue, sorted_tasks
from scheduler_core.actions.victims.capacity import VictimCapacity
from scheduler_core.actions.victims.nodes import NodeCheck, undo_since
from scheduler_core.actions.victims.victims import VictimIndex, allowed_victims, released_by, rows_by_score
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import GuardScope, guard
from scheduler_core.resources import MIN_RESOURCE

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import JobInfo, QueueInfo, TaskInfo

NEVER = "Never"
ATTEMPTS = "preemption_attempts"  # SessionResult.counters key


def _preemptors(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.pending_tasks() if t.preemption_policy != NEVER]


class PreemptAction(Action):
    """Evict lower-priority running tasks of the same queue for starving jobs."""

    name = "preempt"

    def execute(self, ssn: Session) -> None:
        """Preempt between jobs of each queue, then between tasks of each job, then victim tasks."""
        self.index = VictimIndex(ssn)
        self.failed_attempts: dict[tuple, int] = {}  # a failed try's key -> the attempts it made
        self.nodes = NodeCheck(ssn)
        # Tighter, current bound (victim job filters): skips nodes the plugins would refuse.
        self.vcap = VictimCapacity(ssn, self.index, "preemptable")
        options, warnings = topology_options(self.arguments)
        for warning in warnings:
            ssn.result.warn(warning)
        self.topology = (TopologyPreempt(ssn, options, self.index, self.nodes, self.vcap)
                         if options.enabled else None)
        starving: dict[str, list[JobInfo]] = {}
        for job in active_jobs(ssn):
            if ssn.job_starving(job):
                starving.setdefault(job.queue, []).append(job)
        order = PriorityQueue(ssn.queue_order_fn, (ssn.queues[q] for q in starving))
        while order:
            queue = order.pop()
            self._between_jobs(ssn, queue, starving[queue.name])
            self._within_jobs(ssn, starving[queue.name])
        self.vcap.close()
        victims = ssn.shard.own_tasks(ssn.victim_tasks())
        if victims:
            stmt = ssn.statement()
            for task in victims:
                stmt.evict(task, "evict")
            stmt.commit()

    def _between_jobs(self, ssn: Session, queue: QueueInfo, jobs: list[JobInfo]) -> None:
        preemptors = job_queue(ssn, jobs)
        tasks = {job.uid: TaskList(ssn, _preemptors(job)) for job in jobs}
        capacity = None if self.vcap.enabled else self.index.capacity([queue.name])
        while preemptors:
            job = preemptors.pop()
            with guard(ssn, job, self.name) as scope:
                if self._job_between(ssn, scope.statement(), queue, job, tasks[job.uid], capacity):
                    preemptors.push(job)

    def _job_between(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo,
                     pending: TaskList, capacity: np.ndarray | None) -> bool:
        """One turn of a starving job; True when it got something and should go again."""
        assigned = False
        while ssn.job_starving(job) and pending:
            preemptor = pending.pop()

            def other_job_same_queue(t: TaskInfo, job: JobInfo = job) -> bool:
                """Candidate filter: another job of the preemptor's queue."""
                return t.job_uid != job.uid and ssn.jobs[t.job_uid].queue == job.queue

            if self.vcap.enabled:
                def fit(t: TaskInfo, q: str = queue.name, j: str = job.uid) -> np.ndarray:
                    """Rows where the current victims bound could fit t."""
                    return self.vcap.fit_rows(t, queue=q, without_job=j)
            else:
                def fit(t: TaskInfo, capacity: np.ndarray = capacity) -> np.ndarray:
                    """Rows where every possible candidate could fit t."""
                    return self.index.fit_rows(t, capacity)
            if self._try(ssn, stmt, queue, preemptor, fit, other_job_same_queue, ("between", job.uid)):
                assigned = True
        if ssn.job_pipelined(job):
            stmt.commit()
            record_waiting(ssn, self.name, job)
        else:
            stmt.discard()
            return False
        return assigned

    def _within_jobs(self, ssn: Session, jobs: list[JobInfo]) -> None:
        for job in jobs:
            if job.uid in ssn.quarantined:
                continue
            with guard(ssn, job, self.name) as scope:
                self._within_job(ssn, scope, job)

    def _within_job(self, ssn: Session, scope: GuardScope, job: JobInfo) -> None:
        """Higher-priority pending tasks of one job take its lower-priority running ones."""
        capacity = self.index.job_capacity(job.uid)
        if capacity is None:
            return  # no running task of its own to give way
        for preemptor in sorted_tasks(ssn, _preemptors(job)):
            stmt = scope.statement()
            queue = ssn.queues[job.queue]

            def same_job(t: TaskInfo, job: JobInfo = job) -> bool:
                """Candidate filter: the preemptor's own job."""
                return t.job_uid == job.uid

            def fit(t: TaskInfo, capacity: np.ndarray = capacity) -> np.ndarray:
                """Rows where every task of the job could fit t."""
                return self.index.fit_rows(t, capacity)

            if not self._try(ssn, stmt, queue, preemptor, fit, same_job, ("within", job.uid)):
                # Evictions that did not get the preemptor pipelined free nothing it can use.
                stmt.discard()
                break
            stmt.commit()
            record_waiting(ssn, self.name, job)

    def _try(self, ssn: Session, stmt: Statement, queue: QueueInfo, preemptor: TaskInfo,
             fit: Callable[[TaskInfo], np.ndarray], keep: Callable[[TaskInfo], bool], mode: tuple) -> bool:
        """`_preempt`, unless the same try (mode, job, task class) failed on this very state."""
        key = (*mode, preemptor.sched_key)
        if self.vcap.failed_before(key):
            # Volcano would try again, counting the same attempts (volcano_total_preemption_attempts).
            ssn.result.count(ATTEMPTS, self.failed_attempts.get(key, 0))
            return False
        before = ssn.result.counters.get(ATTEMPTS, 0)
        if self.topology is not None:
            if self.topology.preempt(stmt, queue, preemptor, fit(preemptor), keep):
                return True
        elif self._preempt(ssn, stmt, queue, preemptor, fit(preemptor), keep):
            return True
        # A failed try undid every eviction it made (dry runs included): the session is as it
        # was, so the same try on it would fail again.
        self.vcap.remember_failure(key)
        self.failed_attempts[key] = ssn.result.counters.get(ATTEMPTS, 0) - before
        return False

    def _preempt(self, ssn: Session, stmt: Statement, queue: QueueInfo, preemptor: TaskInfo,
                 rows: np.ndarray, keep: Callable[[TaskInfo], bool]) -> bool:
        """Volcano's preempt(): try nodes best first; evict until the preemptor fits; pipeline."""
        table = ssn.node_table
        if not rows.any():
            return False  # no node could ever fit it: the (pure) predicates need not be asked
        rows &= self.nodes.candidates(preemptor)
        best_effort = preemptor.best_effort
        # What the victims of nodes that failed only on the queue (`allocatable`) would have
        # released: a node offering no more cannot pass either (the queue plugins' answer only
        # improves as the queue's allocation falls), so it is skipped without evicting.
        refused: list[np.ndarray] = []
        for row in rows_by_score(ssn, preemptor, rows):
            # A best-effort preemptor only needs a pod slot: it may only take best-effort victims.
            preemptees = [t for t in self.index.running_on(row)
                          if keep(t) and (t.best_effort or not best_effort)]
            if not preemptees:
                continue
            victims = allowed_victims(ssn, preemptor, row, preemptees, self.index, self.vcap.job_keys,
                                      ssn.preemptable)
            if victims is None:
                continue
            released = released_by(ssn, victims, self.index)
            # Volcano's RegisterPreemptionAttempts: once per node whose victims were validated,
            # after its eviction loop (a node skipped below would have been tried there too).
            ssn.result.count(ATTEMPTS)
            if any((released <= r + MIN_RESOURCE).all() for r in refused):
                continue
            mark = len(stmt.operations)
            for victim in victims:
                if ssn.allocatable(queue, preemptor) and self.nodes.fits(preemptor, row):
                    break
                stmt.evict(victim, "preempt")
            if ssn.allocatable(queue, preemptor) and self.nodes.fits(preemptor, row):
                stmt.pipeline(preemptor, table.names[row])
                return True
            if self.nodes.fits(preemptor, row):
                refused.append(released)  # fitted the node: the queue said no
            undo_since(ssn, stmt, mark)  # only the node where the preemptor is placed keeps evictions
        return False

"""reclaim: starving jobs take back resources that other queues hold above their share.

Volcano v1.1x reclaim, with these choices:
- Queues holding valid, non-Pending jobs pop in queue order and are pushed back after each
  turn; an overused queue is dropped. Each turn serves one starving job (job order): its
  pending tasks in task order while it starves, all in one statement, committed when the
  job is `job_pipelined`, else discarded (so a gang never keeps half its victims). A job that
  got something is pushed back.
- Tasks with `preemption_policy: Never` never reclaim. A task reclaims only when its queue
  is `preemptive` for it. Candidate nodes (`victim_nodes.NodeCheck`: only failures eviction
  cannot fix exclude a node) are tried in name order (Volcano walks its node list); under soft
  sharding the shard's nodes first, then the others (hard: only the shard's).
  Candidates on a node: Running, preemptable tasks of jobs in *other* queues whose
  `reclaimable` flag is set (best-effort ones included; a best-effort reclaimer only takes
  best-effort ones), offered in victim order (Volcano: node map order); the `reclaimable`
  callbacks choose victims (e.g. proportion: only from queues above deserved, spending that
  budget on the tasks evicted first). If future idle plus every victim cannot fit the task,
  the next node is tried (each victim gives back its pod slot); otherwise victims are evicted in
  victim order (victim queue order, then the plugins' job order reversed, then reverse task
  order) until the task fits the node's future idle with a free pod slot and the node's
  fixable predicates pass with the evicted tasks gone, and the task is pipelined there. When
  every victim is evicted and it still does not fit, that node's evictions are undone (as in
  preempt) before the next node is tried.
Speed (same decisions): nodes whose possible victims cannot fit the task are skipped without
asking the plugins (`victim_capacity.VictimCapacity`), and a try that failed without changing
anything is not repeated for a task of the same class until the session changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.actions.util.common import active_jobs, record_queue_refusal, record_waiting
from scheduler_core.actions.util.ordering import PriorityQueue, TaskList, job_queue
from scheduler_core.actions.victims.capacity import VictimCapacity
from scheduler_core.actions.victims.nodes import NodeCheck, undo_since
from scheduler_core.actions.victims.victims import VictimIndex, allowed_victims
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import guard

NEVER = "Never"

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import JobInfo, QueueInfo, TaskInfo


class ReclaimAction(Action):
    """Evict tasks of reclaimable queues for starving jobs of queues below their share."""

    name = "reclaim"

    def execute(self, ssn: Session) -> None:
        """Round-robin over queues, one starving job per turn."""
        self.index = VictimIndex(ssn)
        self.nodes = NodeCheck(ssn)
        self.reclaimable_queues = sorted(q.name for q in ssn.queues.values() if q.reclaimable)
        self._caps: dict[str, np.ndarray] = {}
        # Tighter, current bound (victim job filters): skips nodes the plugins would refuse.
        self.vcap = VictimCapacity(ssn, self.index, "reclaimable", self.reclaimable_queues)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        starving: dict[str, PriorityQueue[JobInfo]] = {}
        tasks: dict[str, TaskList] = {}
        seen: set[str] = set()
        for job in active_jobs(ssn):
            if job.queue not in seen:
                seen.add(job.queue)
                queues.push(ssn.queues[job.queue])
            if ssn.job_starving(job):
                starving.setdefault(job.queue, job_queue(ssn)).push(job)
                # preemption_policy Never: the task never makes others leave (Kubernetes' rule;
                # reclaim evicts just as preempt does).
                reclaimers = [t for t in job.pending_tasks() if t.preemption_policy != NEVER]
                tasks[job.uid] = TaskList(ssn, reclaimers)
        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = starving.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            with guard(ssn, job, self.name) as scope:
                if self._reclaim_for_job(ssn, scope.statement(), queue, job, tasks[job.uid]):
                    jobs.push(job)
            queues.push(queue)
        self.vcap.close()

    def _reclaim_for_job(self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo,
                         pending: TaskList) -> bool:
        """Reclaim for the job's pending tasks in one statement; True when something was pipelined."""
        assigned = False
        capacity = self._caps.get(queue.name)
        if capacity is None and not self.vcap.enabled:  # fixed for the action: once per queue
            others = [q for q in self.reclaimable_queues if q != queue.name]
            capacity = self._caps[queue.name] = self.index.capacity(others)
        while pending and ssn.job_starving(job):
            task = pending.pop()
            if not ssn.preemptive(queue, task):
                record_queue_refusal(ssn, self.name, job, queue, overused=False)
                continue
            key = (job.uid, task.sched_key)
            if self.vcap.failed_before(key):
                continue  # the same try failed and the session has not changed since
            if self.vcap.enabled:
                rows = self.vcap.fit_rows(task, without_queue=queue.name)
            else:
                rows = self.index.fit_rows(task, capacity)
            if self._reclaim(ssn, stmt, job, task, rows):
                assigned = True
            else:  # a failed try undid every eviction it made: the session is as it was
                self.vcap.remember_failure(key)
        if ssn.job_pipelined(job):
            stmt.commit()
            record_waiting(ssn, self.name, job)
            return assigned
        stmt.discard()
        return False

    def _reclaim(self, ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo,
                 rows: np.ndarray) -> bool:
        """Try the task on each promising node; evict victims and pipeline it on the first that works."""
        table = ssn.node_table
        if not rows.any():
            return False  # no node could ever fit it: the (pure) predicates need not be asked
        rows &= self.nodes.candidates(task)
        best_effort = task.best_effort
        for row in ssn.shard.ordered(rows):  # name order; soft sharding: the shard's nodes first
            reclaimees = []
            for t in self.index.running_on(row):
                if best_effort and not t.best_effort:
                    continue  # a best-effort reclaimer needs a pod slot, not resources
                q = ssn.queues[ssn.jobs[t.job_uid].queue]
                if q.name != job.queue and q.reclaimable:
                    reclaimees.append(t)
            if not reclaimees:
                continue
            victims = allowed_victims(ssn, task, row, reclaimees, self.index, self.vcap.job_keys,
                                      ssn.reclaimable)
            if victims is None:
                continue
            mark = len(stmt.operations)
            for victim in victims:
                if self.nodes.fits(task, row):
                    break
                stmt.evict(victim, "reclaim")
            if self.nodes.fits(task, row):
                stmt.pipeline(task, table.names[row])
                return True
            undo_since(ssn, stmt, mark)  # only the node where the task is placed keeps evictions
        return False

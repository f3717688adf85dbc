"""enqueue: admit Pending jobs to Inqueue (Volcano's enqueue).

Queues (every queue that has a valid job) pop in queue order and are pushed back after each
job, so admission goes round-robin one job at a time; inside a queue, Pending jobs pop in job
order. A job is admitted when it has no `min_resources` or `job_enqueueable` votes yes; then
the `job_enqueued` callbacks run (queue plugins reserve its `inqueue` resources) and it turns
Inqueue. A rejected job stays Pending: the rejecting plugin records its own reason; when no
plugin did, a generic NotEnqueued reason is recorded.
Validity (`job_valid`) is not asked, as in Volcano: a PodGroup with no pods yet must be
admittable, since the job controller creates its pods only after admission (allocate,
backfill, preempt and reclaim check validity). Jobs set aside by the framework's isolation
(`ssn.quarantined`) are skipped all the same: nothing about them may be evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from scheduler_core.actions.util.common import code
from scheduler_core.actions.util.ordering import KeyedQueue, PriorityQueue, order_queue
from scheduler_core.framework.interface import Action
from scheduler_core.framework.isolation import guard
from scheduler_core.framework.waiting_jobs import waiting_jobs
from scheduler_core.model import JobPhase

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo


def pending_jobs(ssn: Session) -> Iterable[JobInfo]:
    """The session's own jobs that may be Pending, in table order: those in phase Pending from
    the kept index (framework.waiting_jobs) when the session has a kept state, else every own job
    (the caller tests the phase either way)."""
    index = waiting_jobs(ssn)
    if index is None:
        return ssn.own_jobs.values()
    return index.in_order(ssn, index.admission)


def _once(key: Callable[[QueueInfo], Any]) -> Callable[[QueueInfo], Any]:
    """`key` memoised per queue name (for one action's run)."""
    memo: dict[str, Any] = {}

    def once(queue: QueueInfo) -> Any:
        got = memo.get(queue.name)
        if got is None:
            got = memo[queue.name] = key(queue)
        return got

    return once


class EnqueueAction(Action):
    """Admit Pending jobs whose minimum resources the queues can take."""

    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        """Round-robin over queues, one Pending job per turn."""
        # Keyed heaps are exact here too: admitting a job changes no share or readiness, so a
        # queue key read once (even one only valid while figures stand still) keeps its order.
        job_key = ssn.job_order_key()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo] | KeyedQueue[JobInfo]] = {}
        order: list[QueueInfo] = []  # queues in the order the comparator heap was filled
        for job in pending_jobs(ssn):
            if job.phase is not JobPhase.PENDING or job.queue not in ssn.queues:
                continue
            if job.uid in ssn.quarantined:
                continue  # set aside (malformed or failed): never evaluated again this session
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = order_queue(job_key, ssn.job_order_fn)
                order.append(ssn.queues[job.queue])
            jobs_by_queue[job.queue].push(job)
        queue_key = ssn.queue_order_key() or ssn.queue_order_static_key(order)
        if queue_key is not None:
            # A queue's key holds for the whole action (see above): read once per queue, not at
            # every push back.
            queue_key = _once(queue_key)
        queues = order_queue(queue_key, ssn.queue_less())
        for queue in order:
            queues.push(queue)
        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue.name]
            if not jobs:
                continue
            job = jobs.pop()
            with guard(ssn, job, self.name):
                if job.min_resources is None or ssn.job_enqueueable(job):
                    ssn.job_enqueued(job)
                    job.phase = JobPhase.INQUEUE
                elif not ssn.reason_records.get(job.uid):
                    ssn.record_reason(job.uid, code("NotEnqueued"),
                                      f"job {job.uid} not enqueued: queue {queue.name} cannot take its "
                                      "minimum resources", self.name)
            queues.push(queue)

"""Small helpers shared by the actions: job selection and reason recording."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.model import JobPhase, QueueState
from scheduler_core.reasons import ReasonCode

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo


def code(name: str) -> ReasonCode:
    """The ReasonCode member named `name`."""
    return ReasonCode(name)


QUEUE_CODES = frozenset({"QueueClosed", "QueueOverCapability", "QueueOverDeserved"})


def active_jobs(ssn: Session, include_pending: bool = False) -> list[JobInfo]:
    """Valid jobs of known queues, in snapshot order; Pending ones only when asked."""
    out = []
    for job in ssn.jobs.values():
        if job.phase is JobPhase.PENDING and not include_pending:
            continue
        if job.queue not in ssn.queues:
            continue
        if ssn.job_valid(job) is not None:
            continue
        out.append(job)
    return out


def has_queue_reason(ssn: Session, job_uid: str) -> bool:
    """A queue-level reason was already recorded for the job (by a queue plugin or by us)."""
    return any(str(getattr(r["code"], "value", r["code"])) in QUEUE_CODES
               for r in ssn.reason_records.get(job_uid, ()))


def record_queue_refusal(ssn: Session, action: str, job: JobInfo, queue: QueueInfo, overused: bool) -> None:
    """Record why the queue refused the job, unless its queue plugin already said why."""
    if has_queue_reason(ssn, job.uid):
        return
    if queue.state is not QueueState.OPEN:
        ssn.record_reason(job.uid, code("QueueClosed"),
                          f"queue {queue.name} is {queue.state.value.lower()}", action)
    elif overused:
        ssn.record_reason(job.uid, code("QueueOverDeserved"),
                          f"queue {queue.name} is overused: allocated reached its deserved share", action)
    else:
        ssn.record_reason(job.uid, code("QueueOverDeserved"),
                          f"queue {queue.name} resource quota insufficient for the job's next task", action)


def record_waiting(ssn: Session, action: str, job: JobInfo) -> None:
    """Pipelined tasks wait for resources being released: WaitingForPreemption."""
    waiting = job.waiting_task_num()
    if waiting and not ssn.job_ready(job):
        ssn.record_reason(job.uid, code("WaitingForPreemption"),
                          f"{waiting} task(s) pipelined, waiting for releasing resources "
                          f"({action})", action)

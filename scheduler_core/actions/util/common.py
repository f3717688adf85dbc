"""Small helpers shared by the actions: job selection and reason recording."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.records import ReasonCode, refusal
from scheduler_core.framework.waiting_jobs import waiting_jobs
from scheduler_core.model import JobPhase, QueueState, TaskStatus
from scheduler_core.plugins.util.queue_attr import format_dim

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo
    from scheduler_core.resources import Resource


def code(name: str) -> ReasonCode:
    """The ReasonCode member named `name`."""
    return ReasonCode(name)


QUEUE_CODES = frozenset({"QueueClosed", "QueueOverCapability", "QueueOverDeserved"})


def active_jobs(ssn: Session, include_pending: bool = False,
                with_pending_tasks: bool = False) -> list[JobInfo]:
    """Valid jobs of known queues, in snapshot order; Pending ones only when asked; only those
    with a Pending task when `with_pending_tasks` (allocate, backfill: the others' turn would
    do nothing, and most of a steady cluster's jobs run).

    Set-aside jobs (`ssn.quarantined`) are never valid (`Session.job_valid`, memoised per
    session and job state: backfill reuses allocate's answers). With a kept state the jobs with
    a Pending task come from its index (framework.waiting_jobs), not from a walk of every job.
    """
    out = []
    queues, quarantined, pending = ssn.queues, ssn.quarantined, JobPhase.PENDING
    task_pending = TaskStatus.PENDING
    index = waiting_jobs(ssn) if with_pending_tasks else None
    candidates = ssn.own_jobs.values() if index is None else index.in_order(ssn, index.pending)
    for job in candidates:
        uid = job.uid
        if job.phase is pending and not include_pending:
            continue
        if with_pending_tasks and not job.task_status_index.get(task_pending):
            continue  # (validity asked first would record nothing any reason reads: no task waits)
        queue = job.queue  # read once: a logged field (scheduler_core.job_log) costs a property call
        if queue not in queues or uid in quarantined:
            continue
        if ssn.job_valid(job) is None:
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
        # Rendered at close from the committed figures (reason_figures); the message is this
        # moment's view, kept for the ledger.
        ssn.record_reason(job.uid, code("QueueOverDeserved"), _overused_message(ssn, queue), action,
                          {"refusal": refusal("overused", queue.name, "deserved")})
    else:
        ssn.record_reason(job.uid, code("QueueOverDeserved"),
                          f"queue {queue.name} resource quota insufficient for the job's next task", action)


def _listing(names: list[str], res: Resource) -> str:
    return ", ".join(f"{n} {format_dim(n, res.get(n))}" for n in names)


def _overused_message(ssn: Session, queue: QueueInfo) -> str:
    """"queue q is overused: allocated cpu 4 reached its deserved cpu 4" (numbers from the queue
    plugin's figures, over the dimensions of deserved; without figures, the bare statement)."""
    for plugin in ssn.plugins.values():
        opts = getattr(plugin, "queue_opts", None)
        attr = opts.get(queue.name) if isinstance(opts, dict) else None
        if attr is not None:
            names = attr.deserved.resource_names()
            return (f"queue {queue.name} is overused: allocated {_listing(names, attr.allocated)} "
                    f"reached its deserved {_listing(names, attr.deserved)}")
    return f"queue {queue.name} is overused: allocated reached its deserved share"


def record_waiting(ssn: Session, action: str, job: JobInfo) -> None:
    """Pipelined tasks wait for resources being released: WaitingForPreemption."""
    waiting = job.waiting_task_num()
    if waiting and not ssn.job_ready(job):
        ssn.record_reason(job.uid, code("WaitingForPreemption"),
                          f"{waiting} task(s) pipelined, waiting for releasing resources "
                          f"({action})", action)

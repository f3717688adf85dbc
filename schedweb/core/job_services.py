"""Write services of jobs (PodGroups) and tasks; re-exported by schedweb.core.services."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from schedweb.audit.context import current_request_info
from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.audit.services import SYSTEM_ACTOR
from schedweb.audit.services import record as audit_record
from schedweb.core import snapshots
from schedweb.core.job_store import insert_drafts, load_context, resolve
from schedweb.core.job_submission import (
    JobDraft,
    JobExists,
    check_job_shape,
    check_task,
    draft_job,
    max_tasks_per_job,
)
from schedweb.core.models import (
    DEFAULT_SCHEDULER_NAME,
    NODE_BOUND_TASK_STATUSES,
    SUSPENDED_REASON,
    TERMINAL_JOB_PHASES,
    TERMINAL_TASK_STATUSES,
    Job,
    JobPhase,
    Node,
    PriorityClass,
    Queue,
    Task,
    TaskStatus,
)
from schedweb.core.task_specs import prune_task_specs
from schedweb.core.validation import (
    check_choice,
    check_text,
    fail,
)

__all__ = ["TASK_TRANSITIONS", "JobExists", "job_cancel", "job_cancel_many", "job_delete", "job_resume",
           "job_submit", "job_suspend", "max_tasks_per_job", "task_set_status"]

# Legal task status changes (node agents, the scheduler, cancellation). Terminal is final.
TASK_TRANSITIONS: dict[str, frozenset[str]] = {
    TaskStatus.PENDING: frozenset({"Allocated", "Pipelined", "Binding", "Bound", "Failed"}),
    TaskStatus.PIPELINED: frozenset({"Pending", "Allocated", "Binding", "Bound", "Failed"}),
    TaskStatus.ALLOCATED: frozenset({"Pending", "Binding", "Bound", "Running", "Releasing", "Failed"}),
    TaskStatus.BINDING: frozenset({"Pending", "Bound", "Running", "Releasing", "Failed"}),
    TaskStatus.BOUND: frozenset({"Running", "Releasing", "Succeeded", "Failed"}),
    TaskStatus.RUNNING: frozenset({"Releasing", "Succeeded", "Failed"}),
    TaskStatus.RELEASING: frozenset({"Pending", "Succeeded", "Failed"}),
    TaskStatus.SUCCEEDED: frozenset(),
    TaskStatus.FAILED: frozenset(),
}


def _resolve(model: type, value: Any, field: str, label: str) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, model):
        return value
    if isinstance(value, str):
        check_text(value, field, max_length=253)  # before the lookup: PostgreSQL refuses NUL
    found = model.objects.filter(name=value).first() if isinstance(value, str) else None
    if found is None:
        raise fail(field, f"Unknown {label} {value!r}.")
    return found


def _check_task(raw: Any, i: int, nodes: dict[str, Node]) -> dict[str, Any]:
    """One task dict as a Task's fields, checked; errors name `tasks[i].<key>` (job_apply and the
    manifest import; a `replicas` entry is expanded only by job_submit)."""
    checked = check_task(raw, i, nodes)
    checked.pop("replicas", None)
    return checked


_check_job_shape = check_job_shape


def _savepoint() -> Any:
    """A savepoint inside an outer transaction (it stays usable after a refused insert); none in
    autocommit, where the one insert statement is its own transaction."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def job_submit(*, namespace: str, name: str, queue: Queue | str | None = None, tasks: list[dict[str, Any]],
               min_member: int = 1, min_task_member: dict[str, int] | None = None,
               min_resources: Any = None, priority_class: PriorityClass | str | None = None,
               preemptable: bool = True, sla_waiting_time: float | None = None, submitted_by=None,
               idempotency_key: str | None = None, idempotency_hash: str = "",
               phase: str = JobPhase.PENDING, passthrough: dict[str, Any] | None = None,
               scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Job:
    """Submit a job with its tasks into an open leaf queue (None: the default queue).

    Tasks are dicts (name, role, request quantities, priority, preemption_policy, preemptable,
    labels, node_selector, tolerations, affinity, topology_spread_constraints, duration; imports
    and the demo may also give status and node; `replicas: N` stands for N tasks named
    `<job>-<task>-<index>`); at most settings.MAX_TASKS_PER_JOB of them. Task names are unique
    within the job. `phase` is for imports and the demo; new jobs are Pending.
    `scheduler_name` is Volcano's schedulerName (the scheduler instance that places the job).
    `idempotency_hash` is the hash of the request body the `idempotency_key` came with
    (schedweb.api.commands compares it). A job without a priority class gets the globalDefault
    class, if any (Kubernetes' admission). Every problem found is reported at once (one
    ValidationError naming each path); a taken name alone is `JobExists`. The job and all its
    tasks are written in one statement (schedweb.core.job_store).
    """
    draft = draft_job(namespace=namespace, name=name, queue=queue, tasks=tasks, min_member=min_member,
                      min_task_member=min_task_member, min_resources=min_resources,
                      priority_class=priority_class, preemptable=preemptable,
                      sla_waiting_time=sla_waiting_time,
                      submitted_by=submitted_by, idempotency_key=idempotency_key,
                      idempotency_hash=idempotency_hash, phase=phase, passthrough=passthrough,
                      scheduler_name=scheduler_name)
    resolve(draft, load_context([draft]))
    if not draft.ok:
        raise draft.problems.error()
    try:
        with _savepoint():
            [(job, _)] = insert_drafts([draft])
    except IntegrityError as exc:
        raise integrity_error(exc, namespace, name) from None
    return job


def jobs_insert(*, drafts: list[JobDraft]) -> list[tuple[Job, list[dict[str, Any]]]]:
    """Write drafts already checked against one read (the API's batch path,
    schedweb.api.commands.submit_jobs: idempotency, rights, limits) in one statement, inside a
    savepoint of the caller's transaction; returns each job with its task rows
    (schedweb.core.job_store.insert_drafts). A name or key taken since the read raises
    IntegrityError, a queue deleted or split QueueChanged: the caller answers them per item."""
    with _savepoint():
        return insert_drafts(drafts)


def integrity_error(exc: IntegrityError, namespace: str, name: str) -> Exception:
    """What a refused insert means: JobExists for a name taken meanwhile, else the error itself."""
    constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None) or str(exc)
    if "job_namespace_name_unique" in constraint or "core_job.namespace, core_job.name" in constraint:
        return JobExists({"name": [f"Job {namespace}/{name} already exists."]})
    return exc


@transaction.atomic
def job_cancel(*, job: Job, actor: Any = None) -> Job:
    """Cancel a job: tasks holding a node are Releasing, waiting ones Failed; phase Cancelled.

    Recorded in the audit log (`actor` None = the current request's user, or "system")."""
    job = Job.objects.select_related("queue").select_for_update(of=("self",)).get(pk=job.pk)
    if job.phase == JobPhase.CANCELLED:
        return job
    if job.phase == JobPhase.COMPLETED:
        raise fail("phase", f"Job {job.uid} has already completed.")
    now = timezone.now()
    job.tasks.filter(status__in=(TaskStatus.PENDING, TaskStatus.PIPELINED)).update(
        status=TaskStatus.FAILED, node=None, finished=now, updated=now)
    job.tasks.filter(status__in=(TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
                                 TaskStatus.RUNNING)).update(status=TaskStatus.RELEASING, updated=now)
    before = snapshots.job_snapshot(job)
    job.phase, job.finished = JobPhase.CANCELLED, now
    job.save(update_fields=["phase", "finished", "updated"])
    audit_record(action=AuditAction.CANCEL, object_type=AuditObjectType.JOB, object_key=job.uid,
                 before=before, after=snapshots.job_snapshot(job), actor=actor, queue_id=job.queue_id,
                 parent_queue_id=job.queue.parent_id)
    return job


class JobStateConflict(ValidationError):
    """The job is not in a state the operation applies to (finished, already suspended, ...): the
    API answers 409."""


def _actor_name(actor: Any) -> str:
    """Who the audit entry will name: the actor, else the request's user, else "system"."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        info = current_request_info()
        actor = info.user if info is not None else None
    return actor.get_username() if actor is not None else SYSTEM_ACTOR


def _locked(job: Job) -> Job:
    return Job.objects.select_related("queue").select_for_update(of=("self",)).get(pk=job.pk)


def _audit_state(job: Job, before: dict[str, Any], actor: Any) -> None:
    audit_record(action=AuditAction.SET_STATE, object_type=AuditObjectType.JOB, object_key=job.uid,
                 before=before, after=snapshots.job_snapshot(job), actor=actor, queue_id=job.queue_id,
                 parent_queue_id=job.queue.parent_id)


@transaction.atomic
def job_suspend(*, job: Job, actor: Any = None) -> Job:
    """Suspend a job (Volcano's AbortJob): phase Aborted, shown as Suspended, reason `Suspended`.

    Its tasks holding a node are Releasing (the agent turns them Pending once the node let go,
    as it does for preempted tasks); Pipelined ones are Pending again; Pending ones stay. Every
    unfinished task's `updated` moves, so a cycle that read the job before the suspend writes
    none of its binds (the cycle's writes apply only to rows unchanged since its snapshot). The
    scheduler leaves a suspended job out (schedweb.core.models.UNSCHEDULED_JOB_PHASES); its
    Releasing tasks count in its queue until released, as a cancelled job's do. Audited
    (set_state). A finished or already suspended job is a JobStateConflict."""
    job = _locked(job)
    if job.phase in TERMINAL_JOB_PHASES:
        raise JobStateConflict({"phase": [f"Job {job.uid} has already finished ({job.phase})."]})
    if job.phase == JobPhase.ABORTED:
        raise JobStateConflict({"phase": [f"Job {job.uid} is already suspended."]})
    now = timezone.now()
    holding = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)
    job.tasks.filter(status__in=holding).update(status=TaskStatus.RELEASING, updated=now)
    job.tasks.filter(status=TaskStatus.PIPELINED).update(status=TaskStatus.PENDING, node=None, updated=now)
    job.tasks.filter(status__in=(TaskStatus.PENDING, TaskStatus.RELEASING)).update(updated=now)
    before = snapshots.job_snapshot(job)
    job.phase = JobPhase.ABORTED
    job.reason_code, job.reason_since, job.reason_details = SUSPENDED_REASON, now, {}
    job.reason_message = (f"suspended by {_actor_name(actor)} at {now:%Y-%m-%d %H:%M:%S} UTC; "
                          "resume it to schedule it again")
    job.save(update_fields=["phase", "reason_code", "reason_message", "reason_details", "reason_since",
                            "updated"])
    _audit_state(job, before, actor)
    return job


@transaction.atomic
def job_resume(*, job: Job, actor: Any = None) -> Job:
    """Resume a suspended job (Volcano's ResumeJob): phase Pending, reason cleared; its tasks
    wait again and the next cycle schedules it as a new gang (same minimum members). Tasks still
    Releasing become Pending when their node lets go. Audited (set_state); a job that is not
    suspended is a JobStateConflict."""
    job = _locked(job)
    if job.phase != JobPhase.ABORTED:
        state = "has already finished" if job.phase in TERMINAL_JOB_PHASES else "is not suspended"
        raise JobStateConflict({"phase": [f"Job {job.uid} {state} ({job.phase})."]})
    # Touched so the scheduler's kept snapshot, which dropped the job and its tasks while it was
    # suspended, reads them again (schedweb.scheduling.delta re-reads changed rows only).
    job.tasks.exclude(status__in=TERMINAL_TASK_STATUSES).update(updated=timezone.now())
    before = snapshots.job_snapshot(job)
    job.phase = JobPhase.PENDING
    job.reason_code, job.reason_message, job.reason_details, job.reason_since = "", "", {}, None
    job.save(update_fields=["phase", "reason_code", "reason_message", "reason_details", "reason_since",
                            "updated"])
    _audit_state(job, before, actor)
    return job


@transaction.atomic
def job_delete(*, job: Job, actor: Any = None) -> None:
    """Delete a finished job and its tasks (vcctl job delete, after a cancel). A job that is not
    finished, or whose tasks still hold a node (Releasing after a cancel), is a JobStateConflict:
    cancel it and wait for the release. Audited (delete)."""
    job = _locked(job)
    if job.phase not in TERMINAL_JOB_PHASES:
        raise JobStateConflict({"phase": [f"Job {job.uid} is {job.phase}: cancel it first."]})
    if job.tasks.filter(status__in=NODE_BOUND_TASK_STATUSES).exists():
        raise JobStateConflict({"phase": [f"Job {job.uid} still has tasks on nodes (being released): "
                                          "delete it once they are released."]})
    before = snapshots.job_snapshot(job)
    audit_record(action=AuditAction.DELETE, object_type=AuditObjectType.JOB, object_key=job.uid,
                 before=before, after=None, actor=actor, queue_id=job.queue_id,
                 parent_queue_id=job.queue.parent_id)
    specs = list(job.tasks.values_list("spec_id", flat=True).distinct())
    job.delete()
    prune_task_specs(specs)  # its templates' specs, unless another job's tasks share them


@transaction.atomic
def job_cancel_many(*, job_ids: list[int], actor: Any = None) -> dict[int, Job | ValidationError]:
    """Cancel many jobs at once, as job_cancel each (same task and phase changes, one audit entry
    per job), in one transaction with set-based updates; the jobs are locked in id order first
    (the project's lock order: jobs before their tasks, as the cycle locks them).

    Returns per job id the cancelled job (an already cancelled one unchanged) or the
    ValidationError that refused it (a completed job); ids of no job are left out.
    """
    jobs = list(Job.objects.select_related("queue").select_for_update(of=("self",))
                .filter(pk__in=sorted(set(job_ids))).order_by("id"))
    out: dict[int, Job | ValidationError] = {}
    todo: list[Job] = []
    for job in jobs:
        if job.phase == JobPhase.CANCELLED:
            out[job.pk] = job
        elif job.phase == JobPhase.COMPLETED:
            out[job.pk] = fail("phase", f"Job {job.uid} has already completed.")
        else:
            todo.append(job)
    if not todo:
        return out
    now, ids = timezone.now(), [job.pk for job in todo]
    Task.objects.filter(job_id__in=ids, status__in=(TaskStatus.PENDING, TaskStatus.PIPELINED)).update(
        status=TaskStatus.FAILED, node=None, finished=now, updated=now)
    holding = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)
    Task.objects.filter(job_id__in=ids, status__in=holding).update(status=TaskStatus.RELEASING, updated=now)
    Job.objects.filter(pk__in=ids).update(phase=JobPhase.CANCELLED, finished=now, updated=now)
    for job in todo:
        before = snapshots.job_snapshot(job)
        job.phase, job.finished, job.updated = JobPhase.CANCELLED, now, now
        audit_record(action=AuditAction.CANCEL, object_type=AuditObjectType.JOB, object_key=job.uid,
                     before=before, after=snapshots.job_snapshot(job), actor=actor, queue_id=job.queue_id,
                     parent_queue_id=job.queue.parent_id)
        out[job.pk] = job
    return out


@transaction.atomic
def task_set_status(*, task: Task, status: str, node: Node | str | None = None) -> Task:
    """Move a task to `status` along TASK_TRANSITIONS; statuses holding a node need one.

    A job whose tasks have all finished becomes Completed.
    """
    check_choice(status, "status", TaskStatus.values)
    # The job first, then its task: the project's lock order (see scheduling.writes.lock_jobs).
    Job.objects.select_for_update(no_key=True).filter(pk=task.job_id).first()
    task = Task.objects.select_for_update().get(pk=task.pk)
    if status != task.status and status not in TASK_TRANSITIONS[task.status]:
        raise fail("status", f"A {task.status} task cannot become {status}.")
    node_obj = _resolve(Node, node, "node", "node")
    if node_obj is not None:
        task.node = node_obj
    now = timezone.now()
    if status == TaskStatus.PENDING:
        task.node, task.started = None, None
    elif status in NODE_BOUND_TASK_STATUSES and task.node_id is None:
        raise fail("node", f"A {status} task needs a node.")
    if status == TaskStatus.RUNNING and task.started is None:
        task.started = now
    if status in TERMINAL_TASK_STATUSES:
        task.finished = now
    task.status = status
    task.save()
    job = task.job
    if (status in TERMINAL_TASK_STATUSES and job.phase not in TERMINAL_JOB_PHASES
            and not job.tasks.exclude(status__in=TERMINAL_TASK_STATUSES).exists()):
        job.phase, job.finished = JobPhase.COMPLETED, now
        job.save(update_fields=["phase", "finished", "updated"])
    return task

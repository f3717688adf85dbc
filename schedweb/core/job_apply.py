"""Changes to a submitted job: a re-applied manifest (schedweb.api.manifests_apply).

What may change follows `kubectl apply` over Volcano's job webhook (validateJobUpdate), with one
deliberate widening: before the job has started (phase Pending or Inqueue, every task still
Pending: nothing was placed), its whole spec may change (queue, tasks and their templates are
replaced; the job keeps its id). Once started, only what Volcano lets a running job change:
minAvailable (`min_member`), the tasks' minAvailable (`min_task_member`), the priority class,
and the job's annotations (`preemptable`, `sla_waiting_time`) and passthrough fields. A finished
job does not change. Re-exported by schedweb.core.services.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import transaction
from django.db.models import F

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.audit.services import record as audit_record
from schedweb.core.default_queue import (
    default_queue_name,
    ensure_default_queue,
    global_default_priority_class,
)
from schedweb.core.job_services import _check_job_shape, _check_task, _resolve, max_tasks_per_job
from schedweb.core.models import (
    TERMINAL_JOB_PHASES,
    Job,
    JobPhase,
    Node,
    PriorityClass,
    Queue,
    QueueState,
    Task,
    TaskStatus,
)
from schedweb.core.task_spec_values import SPEC_FIELDS
from schedweb.core.task_specs import prune_task_specs
from schedweb.core.validation import check_name, check_object, check_seconds, fail, parse_resources

UNSTARTED_PHASES = (JobPhase.PENDING, JobPhase.INQUEUE)
# Fields a started job may still change (Volcano: minAvailable, priorityClassName, tasks[*].minAvailable;
# metadata and the fields schedweb does not act on).
MUTABLE_WHEN_STARTED = frozenset({"min_member", "min_task_member", "min_resources", "priority_class",
                                  "preemptable", "sla_waiting_time", "passthrough"})


def job_started(job: Job) -> bool:
    """Whether the scheduler has acted on the job: past Pending/Inqueue, or a task left Pending."""
    if job.phase not in UNSTARTED_PHASES:
        return True
    return job.tasks.exclude(status=TaskStatus.PENDING).exists()


def _snapshot(job: Job) -> dict[str, Any]:
    """The audited fields, tasks by role, and a digest of the task specs and passthrough (so a
    changed template shows as a change without copying it into the log)."""
    tasks = list(job.tasks.order_by("name").values(*_TASK_OWN, **{f: F(f"spec__{f}") for f in SPEC_FIELDS}))
    roles: dict[str, int] = {}
    for task in tasks:
        roles[task["role"]] = roles.get(task["role"], 0) + 1
    spec = json.dumps([tasks, job.passthrough], sort_keys=True, default=str)
    return {"namespace": job.namespace, "name": job.name, "queue": job.queue.name, "phase": job.phase,
            "min_member": job.min_member, "min_task_member": job.min_task_member,
            "priority_class": job.priority_class.name if job.priority_class_id else None,
            "preemptable": job.preemptable, "sla_waiting_time": job.sla_waiting_time, "tasks": roles,
            "spec_digest": hashlib.sha256(spec.encode()).hexdigest()[:16]}


# A task's own audited columns; its pod spec fields (SPEC_FIELDS) come from its TaskSpec.
_TASK_OWN = ("name", "role", "request", "priority", "preemption_policy", "preemptable", "duration")


def _leaf_open_queue(queue: Any) -> Queue:
    if queue is None or queue == "" or queue == default_queue_name():
        queue = ensure_default_queue()
    found = _resolve(Queue, queue, "queue", "queue")
    if found.children.exists():
        raise fail("queue", f"Queue {found.name!r} has child queues; jobs go into leaf queues only.")
    if found.state != QueueState.OPEN:
        raise fail("queue", f"Queue {found.name!r} is {found.state}; it accepts no new jobs.")
    return found


_UNSET: Any = object()


@transaction.atomic
def job_update(*, job: Job, queue: Any = _UNSET, tasks: list[dict[str, Any]] | None = None,
               min_member: Any = _UNSET, min_task_member: Any = _UNSET, min_resources: Any = _UNSET,
               priority_class: Any = _UNSET, preemptable: Any = _UNSET, sla_waiting_time: Any = _UNSET,
               passthrough: Any = _UNSET, scheduler_name: Any = _UNSET, actor: Any = None) -> Job:
    """Change the given fields of an unfinished job (see the module docstring for what a started
    job may change); `tasks` (task dicts as job_submit takes them) replaces every task."""
    job = Job.objects.select_related("queue", "priority_class").select_for_update(of=("self",)).get(pk=job.pk)
    if job.phase in TERMINAL_JOB_PHASES:
        raise fail("phase", f"Job {job.uid} is {job.phase}; a finished job does not change.")
    given = {k for k, v in (("queue", queue), ("min_member", min_member),
                            ("min_task_member", min_task_member), ("min_resources", min_resources),
                            ("priority_class", priority_class), ("preemptable", preemptable),
                            ("sla_waiting_time", sla_waiting_time), ("passthrough", passthrough),
                            ("scheduler_name", scheduler_name))
             if v is not _UNSET}
    if tasks is not None:
        given.add("tasks")
    if job_started(job):
        same_queue = queue is _UNSET or _same_queue(job, queue)
        frozen = sorted(given - MUTABLE_WHEN_STARTED - ({"queue"} if same_queue else set()))
        if frozen:
            raise fail(frozen[0], f"Job {job.uid} has started (phase {job.phase}); its {', '.join(frozen)} "
                                  "cannot change.")
    before = _snapshot(job)
    if queue is not _UNSET and not _same_queue(job, queue):
        job.queue = _leaf_open_queue(queue)
    if priority_class is not _UNSET:
        job.priority_class = (_resolve(PriorityClass, priority_class, "priority_class", "priority class")
                              or global_default_priority_class())
    checked: list[dict[str, Any]] | None = None
    if tasks is not None:
        checked = _checked_tasks(job, tasks)
    shape_tasks = checked if checked is not None else [
        {"role": role} for role in job.tasks.values_list("role", flat=True)]
    new_min = job.min_member if min_member is _UNSET else min_member
    new_roles = job.min_task_member if min_task_member is _UNSET else min_task_member
    job.min_task_member = _check_job_shape(shape_tasks, new_min, new_roles)
    job.min_member = new_min
    if min_resources is not _UNSET:
        job.min_resources = parse_resources(min_resources, "min_resources")
    if preemptable is not _UNSET:
        job.preemptable = bool(preemptable)
    if sla_waiting_time is not _UNSET:
        job.sla_waiting_time = check_seconds(sla_waiting_time, "sla_waiting_time")
    if passthrough is not _UNSET:
        job.passthrough = check_object(passthrough, "passthrough")
    if scheduler_name is not _UNSET:
        job.scheduler_name = check_name(scheduler_name, "scheduler_name")
    job.save()
    if checked is not None:
        old_specs = list(job.tasks.values_list("spec_id", flat=True).distinct())
        job.tasks.all().delete()
        Task.objects.bulk_create(Task(job=job, **fields) for fields in checked)
        prune_task_specs(old_specs)  # the replaced template's specs, unless still in use
    audit_record(action=AuditAction.UPDATE, object_type=AuditObjectType.JOB, object_key=job.uid,
                 before=before, after=_snapshot(job), actor=actor, queue_id=job.queue_id,
                 parent_queue_id=job.queue.parent_id)
    return job


def _same_queue(job: Job, queue: Any) -> bool:
    name = queue.name if isinstance(queue, Queue) else (queue or default_queue_name())
    return name == job.queue.name


def _checked_tasks(job: Job, tasks: Any) -> list[dict[str, Any]]:
    """The replacement tasks, checked as job_submit checks them (names unique within the job)."""
    if not isinstance(tasks, list) or not tasks:
        raise fail("tasks", "A job needs at least one task.")
    if len(tasks) > max_tasks_per_job():
        raise fail("tasks", f"A job may have at most {max_tasks_per_job()} tasks (MAX_TASKS_PER_JOB), "
                            f"got {len(tasks)}.")
    nodes: dict[str, Node] = {}
    checked = [_check_task(raw, i, nodes) for i, raw in enumerate(tasks)]
    for i, task in enumerate(checked):
        if task["status"] != TaskStatus.PENDING:
            raise fail(f"tasks[{i}].status", "A re-applied job's tasks start Pending.")
    names = [t["name"] for t in checked]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise fail(f"tasks[{i}].name", f"Duplicate task name {name!r}.")
        seen.add(name)
    return checked  # names are unique per job (the scheduler keys tasks "namespace/job/task")


@transaction.atomic
def job_set_passthrough(*, job: Job, passthrough: dict[str, Any]) -> Job:
    """Store the manifest fields schedweb keeps without acting on them (right after the import
    submitted the job; no audit entry: it is part of that submission)."""
    job.passthrough = check_object(passthrough, "passthrough")
    Job.objects.filter(pk=job.pk).update(passthrough=job.passthrough)
    return job

"""Write services of jobs (PodGroups) and tasks; re-exported by schedweb.core.services."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from schedweb.audit import snapshots
from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.audit.services import record as audit_record
from schedweb.core.default_queue import (
    default_queue_name,
    ensure_default_queue,
    global_default_priority_class,
)
from schedweb.core.models import (
    NODE_BOUND_TASK_STATUSES,
    ROOT_QUEUE_NAME,
    TERMINAL_JOB_PHASES,
    TERMINAL_TASK_STATUSES,
    Job,
    JobPhase,
    Node,
    PreemptionPolicy,
    PriorityClass,
    Queue,
    QueueState,
    Task,
    TaskStatus,
)
from schedweb.core.validation import (
    check_affinity,
    check_choice,
    check_int,
    check_name,
    check_namespace,
    check_seconds,
    check_storable,
    check_string_map,
    check_text,
    check_tolerations,
    check_topology_spread_constraints,
    fail,
    parse_resources,
)

DEFAULT_POLICY = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
TASK_KEYS = frozenset({"name", "role", "request", "priority", "preemption_policy", "preemptable",
                       "labels", "node_selector", "tolerations", "affinity", "topology_spread_constraints",
                       "duration", "status", "node"})

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
    """One task dict of job_submit, checked; errors name `tasks[i].<key>`."""
    where = f"tasks[{i}]"
    if not isinstance(raw, dict):
        raise fail(where, "Expected a task object.")
    unknown = sorted(set(raw) - TASK_KEYS, key=str)
    if unknown:
        check_text(str(unknown[0]), where, max_length=253)
        raise fail(f"{where}.{unknown[0]}", "Unknown field.")
    check_storable(raw, where)
    status = check_choice(raw.get("status", TaskStatus.PENDING), f"{where}.status", TaskStatus.values)
    node = raw.get("node")
    if isinstance(node, Node):
        node = node.name
    if node is not None:
        if node not in nodes:
            found = Node.objects.filter(name=node).first()
            if found is None:
                raise fail(f"{where}.node", f"Unknown node {node!r}.")
            nodes[node] = found
        if status == TaskStatus.PENDING:
            raise fail(f"{where}.node", "A Pending task is not on a node.")
    elif status in NODE_BOUND_TASK_STATUSES:
        raise fail(f"{where}.node", f"A {status} task needs a node.")
    now = timezone.now()
    return {
        "name": check_name(raw.get("name"), f"{where}.name"),
        "role": check_text(raw.get("role"), f"{where}.role", max_length=63),
        "request": parse_resources(raw.get("request") or {}, f"{where}.request"),
        "priority": check_int(raw.get("priority"), f"{where}.priority", nullable=True),
        "preemption_policy": check_choice(raw.get("preemption_policy", DEFAULT_POLICY),
                                          f"{where}.preemption_policy", PreemptionPolicy.values),
        "preemptable": bool(raw.get("preemptable", True)),
        "labels": check_string_map(raw.get("labels"), f"{where}.labels"),
        "node_selector": check_string_map(raw.get("node_selector"), f"{where}.node_selector"),
        "tolerations": check_tolerations(raw.get("tolerations"), f"{where}.tolerations"),
        "affinity": check_affinity(raw.get("affinity"), f"{where}.affinity"),
        "topology_spread_constraints": check_topology_spread_constraints(
            raw.get("topology_spread_constraints"), f"{where}.topology_spread_constraints"),
        "duration": check_seconds(raw.get("duration"), f"{where}.duration"),
        "status": status,
        "node": nodes[node] if node is not None else None,
        "started": now if status in (TaskStatus.RUNNING, *TERMINAL_TASK_STATUSES) else None,
        "finished": now if status in TERMINAL_TASK_STATUSES else None,
    }


def _check_job_shape(tasks: list[dict[str, Any]], min_member: Any, min_task_member: Any) -> dict[str, int]:
    check_int(min_member, "min_member", minimum=0)
    if min_member > len(tasks):
        raise fail("min_member", f"min_member {min_member} is above the task count {len(tasks)}.")
    roles: dict[str, int] = {}
    for task in tasks:
        roles[task["role"]] = roles.get(task["role"], 0) + 1
    if min_task_member is None:
        return {}
    if not isinstance(min_task_member, dict):
        raise fail("min_task_member", "Expected an object of role -> minimum task count.")
    check_storable(min_task_member, "min_task_member")
    for role, n in min_task_member.items():
        check_int(n, "min_task_member", minimum=0)
        if n > roles.get(role, 0):
            raise fail("min_task_member", f"Role {role!r} needs {n} task(s) but the job has "
                                          f"{roles.get(role, 0)}.")
    return dict(min_task_member)


def max_tasks_per_job() -> int:
    """settings.MAX_TASKS_PER_JOB (env, default 10,000): bounded work per submission."""
    return int(getattr(settings, "MAX_TASKS_PER_JOB", 10_000))


@transaction.atomic
def job_submit(*, namespace: str, name: str, queue: Queue | str | None = None, tasks: list[dict[str, Any]],
               min_member: int = 1, min_task_member: dict[str, int] | None = None,
               min_resources: Any = None, priority_class: PriorityClass | str | None = None,
               preemptable: bool = True, sla_waiting_time: float | None = None, submitted_by=None,
               idempotency_key: str | None = None, idempotency_hash: str = "",
               phase: str = JobPhase.PENDING) -> Job:
    """Submit a job with its tasks into an open leaf queue (None: the default queue).

    Tasks are dicts (name, role, request quantities, priority, preemption_policy, preemptable,
    labels, node_selector, tolerations, affinity, topology_spread_constraints, duration; imports
    and the demo may also give status and node); at most settings.MAX_TASKS_PER_JOB of them.
    `phase` is for imports and the demo; new jobs are Pending. `idempotency_hash` is the hash of
    the request body the `idempotency_key` came with (schedweb.api.commands compares it).
    A job without a priority class gets the globalDefault class, if any (Kubernetes' admission).
    """
    check_namespace(namespace)
    check_name(name)
    if isinstance(queue, str) and queue == ROOT_QUEUE_NAME:
        raise fail("queue", f'"{ROOT_QUEUE_NAME}" is the implicit root queue; jobs go into leaf queues only.')
    if idempotency_key is not None:
        check_text(idempotency_key, "Idempotency-Key", max_length=255)
    if not isinstance(tasks, list) or not tasks:
        raise fail("tasks", "A job needs at least one task.")
    limit = max_tasks_per_job()
    if len(tasks) > limit:
        raise fail("tasks", f"A job may have at most {limit} tasks (MAX_TASKS_PER_JOB), got {len(tasks)}.")
    if Job.objects.filter(namespace=namespace, name=name).exists():
        raise fail("name", f"Job {namespace}/{name} already exists.")
    if queue is None or queue == "" or queue == default_queue_name():
        queue = ensure_default_queue()  # Volcano: jobs naming no queue go to "default"
    queue_obj = _resolve(Queue, queue, "queue", "queue")
    if queue_obj.children.exists():
        raise fail("queue", f"Queue {queue_obj.name!r} has child queues; jobs go into leaf queues only.")
    if queue_obj.state != QueueState.OPEN:
        raise fail("queue", f"Queue {queue_obj.name!r} is {queue_obj.state}; it accepts no new jobs.")
    pc = _resolve(PriorityClass, priority_class, "priority_class", "priority class")
    if pc is None:
        pc = global_default_priority_class()
    check_choice(phase, "phase", JobPhase.values)
    nodes: dict[str, Node] = {}
    checked = [_check_task(raw, i, nodes) for i, raw in enumerate(tasks)]
    names = [t["name"] for t in checked]
    dupes = sorted(n for n, count in Counter(names).items() if count > 1)  # linear: jobs have 10k tasks
    if dupes:
        raise fail("tasks", f"Duplicate task name {dupes[0]!r}.")
    taken = set(Task.objects.filter(job__namespace=namespace, name__in=names).values_list("name", flat=True))
    if taken:
        i = next(i for i, n in enumerate(names) if n in taken)
        raise fail(f"tasks[{i}].name", f"Task {namespace}/{names[i]} already exists.")
    roles = _check_job_shape(checked, min_member, min_task_member)
    job = Job.objects.create(
        namespace=namespace, name=name, queue=queue_obj, min_member=min_member, min_task_member=roles,
        min_resources=parse_resources(min_resources, "min_resources"), priority_class=pc,
        phase=phase, preemptable=bool(preemptable),
        sla_waiting_time=check_seconds(sla_waiting_time, "sla_waiting_time"),
        submitted_by=submitted_by, idempotency_key=idempotency_key or None,
        idempotency_hash=(idempotency_hash or "") if idempotency_key else "",
        finished=timezone.now() if phase in TERMINAL_JOB_PHASES else None,
    )
    Task.objects.bulk_create(Task(job=job, **fields) for fields in checked)
    return job


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

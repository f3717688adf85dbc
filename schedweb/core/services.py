"""All writes to the cluster objects. Admin, API and UI call these and nothing else.

Keyword-only arguments; each service is atomic and raises
django.core.exceptions.ValidationError({field: [message]}) and saves nothing on bad input.
Job and task services live in schedweb.core.job_services and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from schedweb.audit import snapshots
from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.audit.services import record as audit_record
from schedweb.core.default_queue import default_queue_name
from schedweb.core.job_apply import job_set_passthrough, job_update
from schedweb.core.job_services import job_cancel, job_submit, task_set_status
from schedweb.core.models import (
    NODE_BOUND_TASK_STATUSES,
    ROOT_QUEUE_NAME,
    TERMINAL_JOB_PHASES,
    NamespaceQuota,
    Node,
    PreemptionPolicy,
    PriorityClass,
    Queue,
    QueueState,
    SchedulerConfig,
)
from schedweb.core.queue_limits import check_queue_limits
from schedweb.core.validation import (
    check_choice,
    check_int,
    check_name,
    check_namespace,
    check_object,
    check_string_map,
    check_taints,
    check_text,
    fail,
    parse_resources,
)
from schedweb.core.yaml_budget import check_yaml_budget

__all__ = [
    "UNSET", "job_cancel", "job_set_passthrough", "job_submit", "job_update", "namespace_quota_set",
    "node_create", "node_delete",
    "node_heartbeat", "node_update", "priority_class_create", "priority_class_delete",
    "priority_class_update", "queue_create", "queue_delete", "queue_set_state", "queue_update",
    "scheduler_config_activate", "task_set_status",
]


class _Unset:
    """Marker for "not given" in update services (None is a meaningful value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


# Audit entries (schedweb.audit) are written inside each service's transaction, with the
# object's snapshot before and after the change.
def _audit(action: str, object_type: str, key: str, before: dict | None, after: dict | None,
           actor: Any) -> None:
    audit_record(action=action, object_type=object_type, object_key=key, before=before, after=after,
                 actor=actor)


def _audit_queue(action: str, queue: Queue, before: dict | None, after: dict | None, actor: Any) -> None:
    # The queue ids let admins of the queue (or of its parent, after a delete) read the entry.
    audit_record(action=action, object_type=AuditObjectType.QUEUE, object_key=queue.name, before=before,
                 after=after, actor=actor, queue_id=queue.pk, parent_queue_id=queue.parent_id)


# --------------------------------------------------------------------------- queues

def _check_queue_name(name: Any, queue: Queue | None = None) -> str:
    check_name(name)
    if name == ROOT_QUEUE_NAME:
        raise fail("name", f'The name "{ROOT_QUEUE_NAME}" is reserved for the implicit root queue.')
    clash = Queue.objects.filter(name=name)
    if queue is not None:
        clash = clash.exclude(pk=queue.pk)
    if clash.exists():
        raise fail("name", f"A queue named {name!r} already exists.")
    return name


def _resolve_queue(parent: Queue | str | None, field: str) -> Queue | None:
    if parent is None or parent == "":
        return None
    if isinstance(parent, Queue):
        return parent
    if parent == ROOT_QUEUE_NAME:
        return None  # the implicit root: top level
    check_text(parent, field, max_length=253)  # before the lookup: PostgreSQL refuses NUL
    found = Queue.objects.filter(name=parent).first()
    if found is None:
        raise fail(field, f"Unknown queue {parent!r}.")
    return found


def _check_parent(queue: Queue | None, parent: Queue | None) -> None:
    """The parent must not be the queue or one of its descendants, and must hold no jobs."""
    if parent is None:
        return
    if queue is not None and queue.pk is not None:
        seen: set[int] = set()
        node: Queue | None = parent
        while node is not None and node.pk not in seen:
            if node.pk == queue.pk:
                raise fail("parent", f"Queue {queue.name!r} cannot be placed under {parent.name!r}: "
                                     "that would make a cycle.")
            seen.add(node.pk)
            node = Queue.objects.filter(pk=node.parent_id).first() if node.parent_id else None
    if parent.jobs.exists():
        raise fail("parent", f"Queue {parent.name!r} holds jobs; only leaf queues hold jobs, so it "
                             "cannot get child queues.")


def _set_acl(queue: Queue, **acl: Iterable | None) -> None:
    for field, members in acl.items():
        if members is not None and members is not UNSET:
            getattr(queue, field).set(list(members))


@transaction.atomic
def queue_create(*, name: str, parent: Queue | str | None = None, weight: int = 1, priority: int = 0,
                 state: str = QueueState.OPEN, reclaimable: bool = True, capability: Any = None,
                 deserved: Any = None, guarantee: Any = None, annotations: dict | None = None,
                 admin_users: Iterable | None = None, admin_groups: Iterable | None = None,
                 submitter_users: Iterable | None = None, submitter_groups: Iterable | None = None,
                 actor: Any = None) -> Queue:
    """Create a queue (parent None or "root" = top level); resource maps accept quantities.

    `actor` (every write service takes it) is the user the audit log names; None = the user of
    the current request, or "system"."""
    _check_queue_name(name)
    parent_queue = _resolve_queue(parent, "parent")
    _check_parent(None, parent_queue)
    limits = {field: parse_resources(value, field) for field, value in
              (("capability", capability), ("deserved", deserved), ("guarantee", guarantee))}
    check_queue_limits(queue=None, name=name, parent=parent_queue, **limits)
    queue = Queue.objects.create(
        name=name, parent=parent_queue, weight=check_int(weight, "weight", minimum=1),
        priority=check_int(priority, "priority"), state=check_choice(state, "state", QueueState.values),
        reclaimable=bool(reclaimable), annotations=check_object(annotations, "annotations"), **limits,
    )
    _set_acl(queue, admin_users=admin_users, admin_groups=admin_groups,
             submitter_users=submitter_users, submitter_groups=submitter_groups)
    _audit_queue(AuditAction.CREATE, queue, None, snapshots.queue_snapshot(queue), actor)
    return queue


@transaction.atomic
def queue_update(*, queue: Queue, name: Any = UNSET, parent: Any = UNSET, weight: Any = UNSET,
                 priority: Any = UNSET, state: Any = UNSET, reclaimable: Any = UNSET,
                 capability: Any = UNSET, deserved: Any = UNSET, guarantee: Any = UNSET,
                 annotations: Any = UNSET, admin_users: Any = UNSET, admin_groups: Any = UNSET,
                 submitter_users: Any = UNSET, submitter_groups: Any = UNSET, actor: Any = None) -> Queue:
    """Change the given fields of a queue (others keep their value)."""
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    before = snapshots.queue_snapshot(queue)
    before_parent = queue.parent_id
    if name is not UNSET:
        if queue.name == default_queue_name() and name != queue.name:
            raise fail("name", f"Queue {queue.name!r} is the default queue (DEFAULT_QUEUE); it cannot be "
                               "renamed.")
        queue.name = _check_queue_name(name, queue)
    if parent is not UNSET:
        new_parent = _resolve_queue(parent, "parent")
        _check_parent(queue, new_parent)
        queue.parent = new_parent
    if weight is not UNSET:
        queue.weight = check_int(weight, "weight", minimum=1)
    if priority is not UNSET:
        queue.priority = check_int(priority, "priority")
    if state is not UNSET:
        queue.state = check_choice(state, "state", QueueState.values)
    if reclaimable is not UNSET:
        queue.reclaimable = bool(reclaimable)
    for field, value in (("capability", capability), ("deserved", deserved), ("guarantee", guarantee)):
        if value is not UNSET:
            setattr(queue, field, parse_resources(value, field))
    if annotations is not UNSET:
        queue.annotations = check_object(annotations, "annotations")
    if any(v is not UNSET for v in (capability, deserved, guarantee, parent)):
        check_queue_limits(queue=queue, name=queue.name, parent=queue.parent, capability=queue.capability,
                           deserved=queue.deserved, guarantee=queue.guarantee,
                           parent_changed=parent is not UNSET and queue.parent_id != before_parent)
    queue.save()
    _set_acl(queue, admin_users=admin_users, admin_groups=admin_groups,
             submitter_users=submitter_users, submitter_groups=submitter_groups)
    _audit_queue(AuditAction.UPDATE, queue, before, snapshots.queue_snapshot(queue), actor)
    return queue


@transaction.atomic
def queue_delete(*, queue: Queue, actor: Any = None) -> None:
    """Delete a queue without child queues and without jobs; never the default queue."""
    if queue.name == default_queue_name():
        # Volcano's queue webhook: "`default` queue can not be deleted" (closing it is allowed).
        raise fail("queue", f"Queue {queue.name!r} is the default queue (DEFAULT_QUEUE): jobs that name no "
                            "queue go there, so it cannot be deleted; close it instead.")
    if queue.children.exists():
        raise fail("queue", f"Queue {queue.name!r} has child queues; delete or move them first.")
    if queue.jobs.exists():
        raise fail("queue", f"Queue {queue.name!r} has jobs; it can be deleted once they are gone.")
    before, pk = snapshots.queue_snapshot(queue), queue.pk
    queue.delete()
    queue.pk = pk  # the entry keeps the id, so admins of the parent still see the deletion
    _audit_queue(AuditAction.DELETE, queue, before, None, actor)


@transaction.atomic
def queue_set_state(*, queue: Queue, state: str, actor: Any = None) -> Queue:
    """Open or close a queue. Closing a queue with unfinished jobs makes it Closing (Volcano)."""
    check_choice(state, "state", QueueState.values)
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    before = snapshots.queue_snapshot(queue)
    if state in (QueueState.CLOSED, QueueState.CLOSING):
        busy = queue.jobs.exclude(phase__in=TERMINAL_JOB_PHASES).exists()
        state = QueueState.CLOSING if busy else QueueState.CLOSED
    queue.state = state
    queue.save(update_fields=["state", "updated"])
    _audit_queue(AuditAction.SET_STATE, queue, before, {**before, "state": queue.state}, actor)
    return queue


# --------------------------------------------------------------------------- nodes

def _check_node_name(name: Any, node: Node | None = None) -> str:
    check_name(name)
    clash = Node.objects.filter(name=name)
    if node is not None:
        clash = clash.exclude(pk=node.pk)
    if clash.exists():
        raise fail("name", f"A node named {name!r} already exists.")
    return name


@transaction.atomic
def node_create(*, name: str, allocatable: Any, labels: Any = None, taints: Any = None,
                unschedulable: bool = False, actor: Any = None) -> Node:
    """Register a node; allocatable accepts quantities and `pods` (default 110)."""
    _check_node_name(name)
    if allocatable is None:
        raise fail("allocatable", "This field is required.")
    node = Node.objects.create(
        name=name, allocatable=parse_resources(allocatable, "allocatable", node=True),
        labels=check_string_map(labels, "labels"), taints=check_taints(taints),
        unschedulable=bool(unschedulable),
    )
    _audit(AuditAction.CREATE, AuditObjectType.NODE, node.name, None, snapshots.node_snapshot(node), actor)
    return node


@transaction.atomic
def node_update(*, node: Node, name: Any = UNSET, allocatable: Any = UNSET, labels: Any = UNSET,
                taints: Any = UNSET, unschedulable: Any = UNSET, actor: Any = None) -> Node:
    """Change the given fields of a node (cordon with unschedulable=True)."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    before = snapshots.node_snapshot(node)
    if name is not UNSET:
        node.name = _check_node_name(name, node)
    if allocatable is not UNSET:
        if allocatable is None:
            raise fail("allocatable", "This field is required.")
        node.allocatable = parse_resources(allocatable, "allocatable", node=True)
    if labels is not UNSET:
        node.labels = check_string_map(labels, "labels")
    if taints is not UNSET:
        node.taints = check_taints(taints)
    if unschedulable is not UNSET:
        node.unschedulable = bool(unschedulable)
    node.save()
    _audit(AuditAction.UPDATE, AuditObjectType.NODE, node.name, before, snapshots.node_snapshot(node), actor)
    return node


@transaction.atomic
def node_delete(*, node: Node, actor: Any = None) -> None:
    """Delete a node that holds no task; finished tasks forget the node."""
    busy = node.tasks.filter(status__in=NODE_BOUND_TASK_STATUSES).count()
    if busy:
        raise fail("node", f"Node {node.name!r} still holds {busy} task(s); drain it first.")
    node.tasks.update(node=None)
    before = snapshots.node_snapshot(node)
    node.delete()
    _audit(AuditAction.DELETE, AuditObjectType.NODE, before["name"], before, None, actor)


@transaction.atomic
def node_heartbeat(*, node: Node, usage_cpu: float, usage_memory: float, now=None) -> Node:
    """Record a node agent's usage report (percent of allocatable) for the usage plugin."""
    for field, value in (("usage_cpu", usage_cpu), ("usage_memory", usage_memory)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            raise fail(field, f"Expected a percentage between 0 and 100, not {value!r}.")
    node.usage_cpu, node.usage_memory = float(usage_cpu), float(usage_memory)
    node.usage_updated = now or timezone.now()
    node.save(update_fields=["usage_cpu", "usage_memory", "usage_updated", "updated"])
    return node


# --------------------------------------------------------------------------- priority classes

def _check_priority_class_name(name: Any, pc: PriorityClass | None = None) -> str:
    check_name(name)
    clash = PriorityClass.objects.filter(name=name)
    if pc is not None:
        clash = clash.exclude(pk=pc.pk)
    if clash.exists():
        raise fail("name", f"A priority class named {name!r} already exists.")
    return name


def _check_global_default(value: Any, pc: PriorityClass | None = None) -> bool:
    """Kubernetes' rule: at most one class is the global default (the constraint backs it up)."""
    if not isinstance(value, bool):
        raise fail("global_default", "Expected true or false.")
    if value:
        other = PriorityClass.objects.select_for_update().filter(global_default=True)
        other = other.exclude(pk=pc.pk).first() if pc is not None else other.first()
        if other is not None:
            raise fail("global_default", f"PriorityClass {other.name!r} is already marked as default. "
                                         "Only one default can exist.")
    return value


@transaction.atomic
def priority_class_create(*, name: str, value: int,
                          preemption_policy: str = PreemptionPolicy.PREEMPT_LOWER_PRIORITY,
                          description: str = "", global_default: bool = False,
                          actor: Any = None) -> PriorityClass:
    """Create a priority class; `global_default` makes it the class of jobs submitted without one."""
    _check_priority_class_name(name)
    pc = PriorityClass.objects.create(
        name=name, value=check_int(value, "value"),
        preemption_policy=check_choice(preemption_policy, "preemption_policy", PreemptionPolicy.values),
        description=check_text(description, "description", multiline=True),
        global_default=_check_global_default(global_default),
    )
    _audit(AuditAction.CREATE, AuditObjectType.PRIORITY_CLASS, pc.name, None,
           snapshots.priority_class_snapshot(pc), actor)
    return pc


@transaction.atomic
def priority_class_update(*, priority_class: PriorityClass, name: Any = UNSET, value: Any = UNSET,
                          preemption_policy: Any = UNSET, description: Any = UNSET,
                          global_default: Any = UNSET, actor: Any = None) -> PriorityClass:
    """Change the given fields of a priority class."""
    pc = PriorityClass.objects.select_for_update().get(pk=priority_class.pk)
    before = snapshots.priority_class_snapshot(pc)
    if name is not UNSET:
        pc.name = _check_priority_class_name(name, pc)
    if value is not UNSET:
        pc.value = check_int(value, "value")
    if preemption_policy is not UNSET:
        pc.preemption_policy = check_choice(preemption_policy, "preemption_policy", PreemptionPolicy.values)
    if description is not UNSET:
        pc.description = check_text(description, "description", multiline=True)
    if global_default is not UNSET:
        pc.global_default = _check_global_default(global_default, pc)
    pc.save()
    _audit(AuditAction.UPDATE, AuditObjectType.PRIORITY_CLASS, pc.name, before,
           snapshots.priority_class_snapshot(pc), actor)
    return pc


@transaction.atomic
def priority_class_delete(*, priority_class: PriorityClass, actor: Any = None) -> None:
    """Delete a priority class that no job uses."""
    used = priority_class.jobs.count()
    if used:
        raise fail("priority_class", f"Priority class {priority_class.name!r} is used by {used} job(s).")
    before = snapshots.priority_class_snapshot(priority_class)
    priority_class.delete()
    _audit(AuditAction.DELETE, AuditObjectType.PRIORITY_CLASS, before["name"], before, None, actor)


# --------------------------------------------------------------------------- quotas and config

@transaction.atomic
def namespace_quota_set(*, namespace: str, hard: Any, actor: Any = None) -> NamespaceQuota | None:
    """Set (create or replace) a namespace's hard quota; hard=None removes it (returns None)."""
    check_namespace(namespace)
    old = NamespaceQuota.objects.select_for_update().filter(namespace=namespace).first()
    before = snapshots.namespace_quota_snapshot(old) if old is not None else None
    quota = None
    if hard is None:
        NamespaceQuota.objects.filter(namespace=namespace).delete()
    else:
        stored = parse_resources(hard, "hard")
        quota, _ = NamespaceQuota.objects.update_or_create(namespace=namespace, defaults={"hard": stored})
    after = snapshots.namespace_quota_snapshot(quota) if quota is not None else None
    if before is not None or after is not None:
        action = (AuditAction.CREATE if before is None else AuditAction.DELETE if after is None
                  else AuditAction.UPDATE)
        _audit(action, AuditObjectType.NAMESPACE_QUOTA, namespace, before, after, actor)
    return quota


@transaction.atomic
def scheduler_config_activate(*, yaml: str, comment: str = "", created_by=None,
                              actor: Any = None) -> SchedulerConfig:
    """Store `yaml` as a new version and make it the only active one (validated by parse_conf).

    The audit entry's actor is `actor`, else `created_by`."""
    from scheduler_core.framework.conf import ConfError, parse_conf

    if not isinstance(yaml, str) or not yaml.strip():
        raise fail("yaml", "The configuration is empty.")
    check_text(yaml, "yaml", multiline=True)
    check_yaml_budget(yaml, "yaml")
    comment = check_text(comment, "comment", multiline=True)
    try:
        parse_conf(yaml)
    except (ConfError, ValueError) as exc:
        raise fail("yaml", str(exc)) from None
    except Exception as exc:  # a YAML syntax error of any kind is the user's input error
        raise fail("yaml", f"Not valid YAML: {exc}") from None
    # Lock the current active row so two activations serialize on it.
    previous = list(SchedulerConfig.objects.select_for_update().filter(active=True))
    SchedulerConfig.objects.filter(active=True).update(active=False)
    version = (SchedulerConfig.objects.aggregate(v=Max("version"))["v"] or 0) + 1
    config = SchedulerConfig.objects.create(version=version, yaml=yaml, active=True,
                                            comment=(comment or "")[:500], created_by=created_by)
    before = snapshots.scheduler_config_snapshot(previous[0]) if previous else None
    _audit(AuditAction.ACTIVATE, AuditObjectType.SCHEDULER_CONFIG, f"v{version}", before,
           snapshots.scheduler_config_snapshot(config), actor or created_by)
    return config

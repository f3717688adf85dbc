"""Write services of nodes; re-exported by schedweb.core.services (import them there)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.core import snapshots
from schedweb.core.models import NODE_BOUND_TASK_STATUSES, Node
from schedweb.core.service_base import UNSET, FieldChecks, as_bool, audit, check_unique_name, field_check
from schedweb.core.validation import check_string_map, check_taints, fail, parse_resources


def _check_allocatable(value: Any, _node: Node | None) -> dict[str, float] | None:
    if value is None:
        raise fail("allocatable", "This field is required.")
    return parse_resources(value, "allocatable", node=True)


# Each column of a node and its check, in the order create and update validate them.
NODE_CHECKS = FieldChecks({
    "name": lambda value, node: check_unique_name(Node, "node", value, node),
    "allocatable": _check_allocatable,
    "labels": field_check(check_string_map, "labels"),
    "taints": field_check(check_taints, "taints"),
    "unschedulable": as_bool,
})


@transaction.atomic
def node_create(*, name: str, allocatable: Any, labels: Any = None, taints: Any = None,
                unschedulable: bool = False, actor: Any = None) -> Node:
    """Register a node; allocatable accepts quantities and `pods` (default 110)."""
    node = Node.objects.create(**NODE_CHECKS.for_create(
        name=name, allocatable=allocatable, labels=labels, taints=taints, unschedulable=unschedulable))
    audit(AuditAction.CREATE, AuditObjectType.NODE, node.name, None, snapshots.node_snapshot(node), actor)
    return node


@transaction.atomic
def node_update(*, node: Node, name: Any = UNSET, allocatable: Any = UNSET, labels: Any = UNSET,
                taints: Any = UNSET, unschedulable: Any = UNSET, actor: Any = None) -> Node:
    """Change the given fields of a node (cordon with unschedulable=True)."""
    node = Node.objects.select_for_update().get(pk=node.pk)
    before = snapshots.node_snapshot(node)
    NODE_CHECKS.apply(node, name=name, allocatable=allocatable, labels=labels, taints=taints,
                      unschedulable=unschedulable)
    node.save()
    audit(AuditAction.UPDATE, AuditObjectType.NODE, node.name, before, snapshots.node_snapshot(node), actor)
    return node


@transaction.atomic
def node_delete(*, node: Node, actor: Any = None) -> None:
    """Delete a node that holds no task; finished tasks forget the node."""
    # Locked first: FOR UPDATE waits for a cycle that holds the node FOR KEY SHARE while it binds
    # tasks there, so the count below sees those binds (else the DELETE would fail on the
    # foreign key once the cycle commits).
    node = Node.objects.select_for_update().get(pk=node.pk)
    busy = node.tasks.filter(status__in=NODE_BOUND_TASK_STATUSES).count()
    if busy:
        raise fail("node", f"Node {node.name!r} still holds {busy} task(s); drain it first.")
    node.tasks.update(node=None)
    before = snapshots.node_snapshot(node)
    node.delete()
    audit(AuditAction.DELETE, AuditObjectType.NODE, before["name"], before, None, actor)


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

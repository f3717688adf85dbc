"""Write services of NodeShards (Volcano's shard.volcano.sh NodeShard); re-exported by
schedweb.core.services (import them there).

Every write locks all shard rows first (there are a handful: one per scheduler instance), so the
rule "a node is desired by at most one shard" is checked against the other shards as they are,
and the sharding controller's write (node_shard_set_desired) and a user's edit never lose each
other's fields: each reads the row again under its lock and saves it whole.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.core import snapshots
from schedweb.core.models import NodeShard, ShardMode
from schedweb.core.queue_services import StaleVersion
from schedweb.core.service_base import UNSET, FieldChecks, audit, check_unique_name, field_check
from schedweb.core.validation import (
    check_choice,
    check_fraction,
    check_int,
    check_name,
    check_name_list,
    fail,
)


def _check_version(shard: NodeShard, expected: int | None) -> None:
    if expected is not None and shard.version != expected:
        raise StaleVersion({"version": [
            f"NodeShard {shard.name!r} was changed by someone else since this version was read (version "
            f"{expected}, now {shard.version}); reload it and make the change again."]})


def _check_scheduler_name(value: Any, shard: NodeShard | None) -> str:
    """A Kubernetes name no other shard's scheduler answers to."""
    check_name(value, "scheduler_name")
    clash = NodeShard.objects.filter(scheduler_name=value)
    if shard is not None and shard.pk is not None:
        clash = clash.exclude(pk=shard.pk)
    other = clash.values_list("name", flat=True).first()
    if other is not None:
        raise fail("scheduler_name", f"NodeShard {other!r} already has scheduler {value!r}.")
    return value


def _check_max_nodes(value: Any, _shard: NodeShard | None) -> int | None:
    return check_int(value, "max_nodes", minimum=0, nullable=True)


# Each column of a shard and its check, in the order create and update validate them.
NODE_SHARD_CHECKS = FieldChecks({
    "name": lambda value, shard: check_unique_name(NodeShard, "NodeShard", value, shard),
    "scheduler_name": _check_scheduler_name,
    "mode": field_check(check_choice, "mode", choices=ShardMode.values),
    "nodes_desired": field_check(check_name_list, "nodes_desired"),
    "min_nodes": field_check(check_int, "min_nodes", minimum=0),
    "max_nodes": _check_max_nodes,
    "cpu_utilization_min": field_check(check_fraction, "cpu_utilization_min"),
    "cpu_utilization_max": field_check(check_fraction, "cpu_utilization_max"),
})


def _lock_all() -> None:
    """Lock every shard row (in id order: two writers never wait on each other in a cycle)."""
    list(NodeShard.objects.select_for_update().order_by("pk").values_list("pk", flat=True))


def _check_policy(shard: NodeShard) -> None:
    """The checks across fields: the band's ends and the node range in order."""
    if shard.cpu_utilization_min > shard.cpu_utilization_max:
        raise fail("cpu_utilization_min", f"cpu_utilization_min ({shard.cpu_utilization_min}) is above "
                                          f"cpu_utilization_max ({shard.cpu_utilization_max}).")
    if shard.max_nodes is not None and shard.min_nodes > shard.max_nodes:
        raise fail("min_nodes", f"min_nodes ({shard.min_nodes}) is above max_nodes ({shard.max_nodes}).")


def _check_exclusive(shard: NodeShard) -> None:
    """No node of the shard's desired list is desired by another shard (checked under _lock_all)."""
    wanted = set(shard.nodes_desired)
    if not wanted:
        return
    others = NodeShard.objects.exclude(pk=shard.pk) if shard.pk is not None else NodeShard.objects.all()
    for other, desired in others.order_by("name").values_list("name", "nodes_desired"):
        both = sorted(wanted.intersection(desired or []))
        if both:
            raise fail("nodes_desired", f"Node {both[0]!r} is already desired by NodeShard {other!r}; a node "
                                        "belongs to one shard at a time.")


def _derive(shard: NodeShard) -> None:
    """Volcano's status lists: to add = desired not in use, to remove = in use not desired."""
    in_use = set(shard.nodes_in_use or [])
    desired = set(shard.nodes_desired or [])
    shard.nodes_to_add = [n for n in shard.nodes_desired if n not in in_use]
    shard.nodes_to_remove = [n for n in shard.nodes_in_use or [] if n not in desired]


def _audit(action: str, key: str, before: dict | None, after: dict | None, actor: Any) -> None:
    audit(action, AuditObjectType.NODE_SHARD, key, before, after, actor)


@transaction.atomic
def node_shard_create(*, name: str, scheduler_name: str, mode: str = ShardMode.HARD,
                      nodes_desired: Any = None, min_nodes: int = 0, max_nodes: int | None = None,
                      cpu_utilization_min: float = 0.0, cpu_utilization_max: float = 1.0,
                      actor: Any = None) -> NodeShard:
    """Create a shard: its scheduler's name and mode, the controller's policy, and optionally the
    nodes it desires (every one of them to add: nothing is in use yet)."""
    _lock_all()
    shard = NodeShard(**NODE_SHARD_CHECKS.for_create(
        name=name, scheduler_name=scheduler_name, mode=mode, nodes_desired=nodes_desired,
        min_nodes=min_nodes, max_nodes=max_nodes, cpu_utilization_min=cpu_utilization_min,
        cpu_utilization_max=cpu_utilization_max))
    _check_policy(shard)
    _check_exclusive(shard)
    _derive(shard)
    if shard.nodes_desired:
        shard.last_update_time = timezone.now()
    shard.save()
    _audit(AuditAction.CREATE, shard.name, None, snapshots.node_shard_snapshot(shard), actor)
    return shard


def _locked(shard: NodeShard) -> NodeShard:
    _lock_all()
    found = NodeShard.objects.filter(pk=shard.pk).first()
    if found is None:
        raise fail("nodeshard", f"NodeShard {shard.name!r} no longer exists.")
    return found


@transaction.atomic
def node_shard_update(*, shard: NodeShard, name: Any = UNSET, scheduler_name: Any = UNSET, mode: Any = UNSET,
                      nodes_desired: Any = UNSET, min_nodes: Any = UNSET, max_nodes: Any = UNSET,
                      cpu_utilization_min: Any = UNSET, cpu_utilization_max: Any = UNSET,
                      actor: Any = None, expected_version: int | None = None) -> NodeShard:
    """Change the given fields of a shard (others keep their value, the controller's included).
    `expected_version`: the version the caller read (StaleVersion when it changed since); each
    write adds 1 to it."""
    shard = _locked(shard)
    _check_version(shard, expected_version)
    before = snapshots.node_shard_snapshot(shard)
    NODE_SHARD_CHECKS.apply(shard, name=name, scheduler_name=scheduler_name, mode=mode,
                            nodes_desired=nodes_desired, min_nodes=min_nodes, max_nodes=max_nodes,
                            cpu_utilization_min=cpu_utilization_min, cpu_utilization_max=cpu_utilization_max)
    _check_policy(shard)
    if nodes_desired is not UNSET:
        _check_exclusive(shard)
        _derive(shard)
        shard.last_update_time = timezone.now()
    shard.version += 1
    shard.save()
    _audit(AuditAction.UPDATE, shard.name, before, snapshots.node_shard_snapshot(shard), actor)
    return shard


@transaction.atomic
def node_shard_delete(*, shard: NodeShard, actor: Any = None, expected_version: int | None = None) -> None:
    """Delete a shard; its scheduler then finds no shard of its name (its jobs wait for one)."""
    shard = _locked(shard)
    _check_version(shard, expected_version)
    before = snapshots.node_shard_snapshot(shard)
    shard.delete()
    _audit(AuditAction.DELETE, before["name"], before, None, actor)


@transaction.atomic
def node_shard_set_desired(*, shard: NodeShard, nodes: Any, now: dt.datetime | None = None,
                           actor: Any = None, expected_version: int | None = None) -> NodeShard:
    """The sharding controller's write: the shard's desired nodes, its to add / to remove lists
    against its nodes in use, and last_update_time. The policy and the scheduler's fields are
    left as they are under the lock."""
    shard = _locked(shard)
    _check_version(shard, expected_version)
    before = snapshots.node_shard_snapshot(shard)
    shard.nodes_desired = check_name_list(nodes, "nodes_desired")
    _check_exclusive(shard)
    _derive(shard)
    shard.last_update_time = now or timezone.now()
    shard.version += 1
    shard.save()
    _audit(AuditAction.UPDATE, shard.name, before, snapshots.node_shard_snapshot(shard), actor)
    return shard


@transaction.atomic
def node_shard_set_in_use(*, shard: NodeShard, nodes: Any) -> NodeShard:
    """The shard's scheduler's write: the nodes it used in its last cycle, and the to add / to
    remove lists against its desired ones. Status, not settings: not audited, version unchanged
    (an edit based on the version read still applies)."""
    shard = _locked(shard)
    shard.nodes_in_use = check_name_list(nodes, "nodes_in_use")
    _derive(shard)
    shard.save(update_fields=["nodes_in_use", "nodes_to_add", "nodes_to_remove", "updated"])
    return shard

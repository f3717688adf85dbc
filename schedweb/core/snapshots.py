"""JSON snapshots of audited objects (what an audit entry's `before` / `after` store; the diff is
schedweb.audit.diff)."""

from __future__ import annotations

from typing import Any

from schedweb.core.models import Job, NamespaceQuota, Node, NodeShard, PriorityClass, Queue, SchedulerConfig


def queue_snapshot(queue: Queue) -> dict[str, Any]:
    """A queue's settings with its parent and ACL members by name (sorted, so diffs are stable)."""
    parent = Queue.objects.filter(pk=queue.parent_id).values_list("name", flat=True).first() \
        if queue.parent_id else None
    return {
        "name": queue.name, "parent": parent, "weight": queue.weight, "priority": queue.priority,
        "state": queue.state, "reclaimable": queue.reclaimable, "capability": queue.capability,
        "deserved": queue.deserved, "guarantee": queue.guarantee, "annotations": queue.annotations,
        "admin_users": sorted(queue.admin_users.values_list("username", flat=True)),
        "admin_groups": sorted(queue.admin_groups.values_list("name", flat=True)),
        "submitter_users": sorted(queue.submitter_users.values_list("username", flat=True)),
        "submitter_groups": sorted(queue.submitter_groups.values_list("name", flat=True)),
    }


def node_snapshot(node: Node) -> dict[str, Any]:
    """A node's settings (usage figures are heartbeat data, not settings)."""
    return {"name": node.name, "allocatable": node.allocatable, "labels": node.labels, "taints": node.taints,
            "unschedulable": node.unschedulable}


def priority_class_snapshot(pc: PriorityClass) -> dict[str, Any]:
    """A priority class's fields."""
    return {"name": pc.name, "value": pc.value, "preemption_policy": pc.preemption_policy,
            "description": pc.description}


def namespace_quota_snapshot(quota: NamespaceQuota) -> dict[str, Any]:
    """A namespace quota's fields."""
    return {"namespace": quota.namespace, "hard": quota.hard}


def scheduler_config_snapshot(config: SchedulerConfig) -> dict[str, Any]:
    """A configuration version: its number, YAML and comment."""
    return {"version": config.version, "yaml": config.yaml, "comment": config.comment}


def job_snapshot(job: Job) -> dict[str, Any]:
    """The job fields a cancellation changes, with where it lives."""
    return {"namespace": job.namespace, "name": job.name, "queue": job.queue.name, "phase": job.phase}



NODE_SHARD_FIELDS = ("name", "scheduler_name", "mode", "nodes_desired", "nodes_in_use", "nodes_to_add",
                     "nodes_to_remove", "min_nodes", "max_nodes", "cpu_utilization_min",
                     "cpu_utilization_max")


def node_shard_snapshot(shard: NodeShard) -> dict[str, Any]:
    """A NodeShard's spec, status lists and policy (the version and times are bookkeeping)."""
    out: dict[str, Any] = {field: getattr(shard, field) for field in NODE_SHARD_FIELDS}
    out["last_update_time"] = shard.last_update_time.isoformat() if shard.last_update_time else None
    return out

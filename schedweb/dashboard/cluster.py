"""Node reads: cluster totals, per-node allocation and task counts (two grouped queries)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count
from django.utils import timezone

from schedweb.core.choices import NODE_BOUND_TASK_STATUSES
from schedweb.core.models import Node, Task
from schedweb.dashboard.units import add_into, dims_of, percent

# Node metrics older than this are stale (scheduler_core's usage plugin uses the same 300 s).
USAGE_FRESH = timedelta(seconds=300)


@dataclass
class NodeRow:
    """A node with what its tasks hold and its metrics' freshness."""

    node: Node
    allocated: dict[str, float]
    tasks: int

    @property
    def usage_age(self) -> float | None:
        """Seconds since the last usage heartbeat (None: never reported)."""
        updated: datetime | None = self.node.usage_updated
        return None if updated is None else (timezone.now() - updated).total_seconds()

    @property
    def usage_fresh(self) -> bool:
        """Metrics reported within the last five minutes."""
        age = self.usage_age
        return age is not None and age <= USAGE_FRESH.total_seconds()

    def utilisation(self, dim: str) -> float | None:
        """Allocated as a percentage of allocatable on one resource (None if the node has none)."""
        return percent(self.allocated.get(dim, 0.0), self.node.allocatable.get(dim))


@dataclass
class Cluster:
    """All nodes with their allocation, and the cluster totals over schedulable nodes."""

    nodes: list[NodeRow]
    dims: list[str]
    total: dict[str, float]
    allocated: dict[str, float]
    schedulable: int
    cordoned: int

    def utilisation(self, dim: str) -> float | None:
        """Cluster-wide allocated / allocatable on one resource, in percent."""
        return percent(self.allocated.get(dim, 0.0), self.total.get(dim))


def load_cluster() -> Cluster:
    """Nodes (one query) and what their tasks hold (one query grouped by identical requests)."""
    nodes = list(Node.objects.order_by("name"))
    allocated: dict[int, dict[str, float]] = defaultdict(dict)
    counts: dict[int, int] = defaultdict(int)
    rows = (Task.objects.filter(status__in=NODE_BOUND_TASK_STATUSES, node__isnull=False)
            .values("node_id", "request").annotate(n=Count("id")).order_by())
    for row in rows:
        add_into(allocated[row["node_id"]], row["request"], row["n"])
        counts[row["node_id"]] += row["n"]
    total: dict[str, float] = {}
    used: dict[str, float] = {}
    node_rows = []
    for node in nodes:
        node_rows.append(NodeRow(node=node, allocated=allocated.get(node.id, {}),
                                 tasks=counts.get(node.id, 0)))
        if not node.unschedulable:
            add_into(total, node.allocatable)
        add_into(used, allocated.get(node.id))
    cordoned = sum(1 for n in nodes if n.unschedulable)
    return Cluster(nodes=node_rows, dims=dims_of(n.allocatable for n in nodes), total=total, allocated=used,
                   schedulable=len(nodes) - cordoned, cordoned=cordoned)

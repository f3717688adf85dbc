"""A node's measured usage while it is fresh (read by the usage and rescheduling plugins)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.model import NodeInfo

METRICS_ACTIVE_SECONDS = 300.0  # Volcano's MetricsActiveTime


def fresh_usage(node: NodeInfo, now: float) -> dict[str, float] | None:
    """The node's usage percentages when reported within METRICS_ACTIVE_SECONDS, else None."""
    if node.usage is None or node.usage_time is None or now - node.usage_time > METRICS_ACTIVE_SECONDS:
        return None
    return node.usage

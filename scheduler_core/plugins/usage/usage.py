"""usage: keep tasks off busy nodes and prefer idle ones, by measured usage (as in Volcano).

A node's `usage` ({"cpu": %, "memory": %}) counts only while fresh: `usage_time` within
METRICS_ACTIVE_SECONDS (5 minutes, Volcano's MetricsActiveTime) of the session's `now`; stale
or missing metrics make the node pass the predicate and score 0 (a broken metrics pipeline must
not block scheduling).
Arguments (Volcano's names and defaults): `usage.weight` 5, `cpu.weight` 1, `memory.weight` 1,
`thresholds: {cpu: 80, mem: 80}` (percent; `memory` accepted for `mem`).
- predicate: a node whose cpu usage is above the cpu threshold fails with
  "node(s) had cpu usage above 80%"; else memory above its threshold fails likewise.
- node order: `((100 - cpu) / 100 * cpu.weight + (100 - mem) / 100 * memory.weight)
  / (cpu.weight + memory.weight) * 100 * usage.weight`.
Both depend only on node metrics, so they are computed once per session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.signature import Signature
from scheduler_core.plugins.util.node_usage import fresh_usage

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

MAX_NODE_SCORE = 100.0


def _number(arguments: dict[str, Any], key: str, default: float) -> float:
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return default
    try:
        return float(value)
    except ValueError:
        return default


class UsagePlugin(Plugin):
    """Usage thresholds as a predicate, free share as a score."""

    name = "usage"

    score_hint = "nodes whose measured cpu and memory usage is low"

    signature = Signature()  # the same answer for every task: node metrics only

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        a = self.arguments
        self.usage_weight = _number(a, "usage.weight", 5)
        self.cpu_weight = _number(a, "cpu.weight", 1)
        self.memory_weight = _number(a, "memory.weight", 1)
        th = a.get("thresholds") if isinstance(a.get("thresholds"), dict) else {}
        self.cpu_threshold = _number(th, "cpu", 80)
        self.mem_threshold = _number(th, "mem", _number(th, "memory", 80))
        self.failures: list[tuple[str, np.ndarray]] = []
        self.scores = np.zeros(0)

    def node_score(self, usage: dict[str, float] | None) -> float:
        """Score of one node from its fresh usage (0 without cpu and memory figures)."""
        if usage is None or "cpu" not in usage or "memory" not in usage:
            return 0.0
        weights = self.cpu_weight + self.memory_weight
        if weights == 0:
            return 0.0
        cpu = (100 - usage["cpu"]) / 100 * self.cpu_weight
        mem = (100 - usage["memory"]) / 100 * self.memory_weight
        return (cpu + mem) / weights * MAX_NODE_SCORE * self.usage_weight

    def on_session_open(self, ssn: Session) -> None:
        """Compute the failing masks and the scores once; register predicate and node order."""
        table = ssn.node_table
        n = len(table)
        cpu_over, mem_over = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self.scores = np.zeros(n)
        for i, node in enumerate(table.nodes):
            usage = fresh_usage(node, ssn.now)
            self.scores[i] = self.node_score(usage)
            if usage is None:
                continue
            if usage.get("cpu", 0.0) > self.cpu_threshold:
                cpu_over[i] = True
            elif usage.get("memory", 0.0) > self.mem_threshold:
                mem_over[i] = True
        self.failures = [(f"node(s) had {dim} usage above {limit:g}%", mask) for dim, limit, mask in (
            ("cpu", self.cpu_threshold, cpu_over), ("memory", self.mem_threshold, mem_over)) if mask.any()]
        for _, mask in self.failures:
            mask.setflags(write=False)
        self.scores.setflags(write=False)
        ssn.add_predicate_fn(self.name, self.predicate, static=True, signature=self.signature)
        ssn.add_node_order_fn(self.name, self.node_order, signature=self.signature)

    def predicate(self, task: TaskInfo, table: NodeTable) -> list[tuple[str, np.ndarray]]:
        """Nodes over a usage threshold (the same for every task)."""
        return self.failures

    def node_order(self, task: TaskInfo, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        """Free-share score per row (the same for every task)."""
        return self.scores

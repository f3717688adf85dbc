"""binpack plugin: prefer nodes that end up fuller (Volcano's `binpack`), vectorised over rows.

Arguments (Volcano defaults): `binpack.weight` 1, `binpack.cpu` 1, `binpack.memory` 1,
`binpack.resources` ("nvidia.com/gpu, example.com/foo") with `binpack.resources.<name>` weights
(default 1; negative weights become 1). Volcano's formula, for each resource the task requests
(request > 0) that has a weight:
    resource score = (used + request) * weight / allocatable   (0 when allocatable is 0)
    node score     = sum(resource scores) / sum(weights) * 100 * binpack.weight
and the node scores 0 when `used + request` exceeds allocatable on any scored resource.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.signature import Signature

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

MAX_NODE_SCORE = 100


def _int(arguments: dict[str, Any], key: str, default: int) -> int:
    try:
        return int(arguments.get(key, default))
    except (TypeError, ValueError):
        return default


def parse_weights(arguments: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """(binpack.weight, resource name -> weight) from the plugin arguments."""
    weights: dict[str, int] = {}
    for name, key in (("cpu", "binpack.cpu"), ("memory", "binpack.memory")):
        w = _int(arguments, key, 1)
        weights[name] = w if w >= 0 else 1
    for name in str(arguments.get("binpack.resources", "") or "").split(","):
        name = name.strip()
        if name and name not in weights:
            w = _int(arguments, f"binpack.resources.{name}", 1)
            weights[name] = w if w >= 0 else 1
    return _int(arguments, "binpack.weight", 1), weights


class BinpackPlugin(Plugin):
    """Scores nodes by how full the requested resources would be after placing the task."""

    name = "binpack"

    score_hint = ("fuller nodes: the share of the node's cpu and memory (and weighted scalars) used once "
                  "the task lands")

    signature = Signature(("resreq",))  # the score reads the task's request only

    def __init__(self, arguments: dict | None = None) -> None:
        super().__init__(arguments)
        self.weight, self.resource_weights = parse_weights(self.arguments)
        self._plans: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        # id(request Resource) -> (that Resource, [(column, request, weight)], factor): the
        # one-row scorer's plan in Python floats (the Resource is kept so the id stays valid).
        self._row_plans: dict[int, tuple[Any, list[tuple[int, float, float]], float]] = {}
        self._full: NodeTable | None = None

    def _plan(self, task: TaskInfo, table: NodeTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(columns, requests, weights, weight sum) of the scored resources, cached per request."""
        r = task.resreq
        key = (r.milli_cpu, r.memory, tuple(sorted(r.scalars.items())))
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        cols: list[int] = []
        reqs: list[float] = []
        weights: list[int] = []
        weight_sum = 0
        for name in task.resreq.resource_names():
            request = task.resreq.get(name)
            w = self.resource_weights.get(name)
            if request == 0 or w is None:
                continue
            weight_sum += w
            j = table.dim_index.get(name)
            # No node has the resource (allocatable 0) or weight 0: it scores 0 without error.
            if j is not None and w != 0:
                cols.append(j)
                reqs.append(request)
                weights.append(w)
        hit = (np.array(cols, dtype=np.intp), np.array(reqs), np.array(weights, dtype=float), weight_sum)
        self._plans[key] = hit
        return hit

    def _row_score(self, task: TaskInfo, table: NodeTable, r: int = 0) -> float:
        """score() of row r in plain floats (the per-placement re-score: no numpy calls)."""
        plan = self._row_plans.get(id(task.resreq))
        if plan is None or plan[0] is not task.resreq:
            cols, reqs, weights, weight_sum = self._plan(task, table)
            plan = (task.resreq, list(zip(cols.tolist(), reqs.tolist(), weights.tolist(), strict=True)),
                    (MAX_NODE_SCORE * self.weight / weight_sum) if weight_sum else 0.0)
            self._row_plans[id(task.resreq)] = plan
        alloc, used = table.allocatable, table.used
        acc = 0.0
        for j, request, w in plan[1]:
            a = float(alloc[r, j])
            if a > 0:
                final = float(used[r, j]) + request
                if final > a:
                    return 0.0
                acc += final * w / a
        return acc * plan[2]

    def row_score(self, task: TaskInfo, r: int) -> float:
        """score() of row r of the session's table."""
        if self.weight == 0 or self._full is None:
            return 0.0
        return self._row_score(task, self._full, r)  # weight sum 0: factor 0, score 0

    def score(self, task: TaskInfo, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        """Volcano's BinPackingScore for every row in `mask` (others 0)."""
        if len(table) == 1 and self.weight != 0:
            scored = mask[0] and self._plan(task, table)[3]  # weight sum 0: nothing to score
            return np.array([self._row_score(task, table) if scored else 0.0])
        out = np.zeros(len(table))
        idx = np.flatnonzero(mask)
        if not len(idx) or self.weight == 0:
            return out
        cols, reqs, weights, weight_sum = self._plan(task, table)
        if not len(cols):
            return out
        alloc = table.allocatable[np.ix_(idx, cols)]
        final = table.used[np.ix_(idx, cols)] + reqs
        pos = alloc > 0
        s = np.divide(final * weights, alloc, out=np.zeros_like(final), where=pos)
        total = s.sum(axis=1) * (MAX_NODE_SCORE * self.weight / weight_sum)
        total[(pos & (final > alloc)).any(axis=1)] = 0.0
        out[idx] = total
        return out

    def on_session_open(self, ssn: Session) -> None:
        """Register the node order score."""
        self._plans.clear()
        self._row_plans.clear()
        self._full = ssn.node_table
        ssn.add_node_order_fn(self.name, self.score, row_fn=self.row_score, signature=self.signature)

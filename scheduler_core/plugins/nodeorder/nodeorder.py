"""nodeorder plugin: weighted kube-scheduler scores, vectorised over NodeTable rows.

Arguments (Volcano's defaults): `leastrequested.weight` 1, `mostrequested.weight` 0,
`balancedresource.weight` 1, `nodeaffinity.weight` 2, `tainttoleration.weight` 3
`podaffinity.weight` 2, `podtopologyspread.weight` 2 (`imagelocality` is accepted and ignored).
Each kube score is 0-100 (MaxNodeScore) with kube's integer arithmetic, times its weight:
- leastrequested: per cpu/memory `(alloc - req) * 100 // alloc` (0 when req > alloc),
  averaged (integer) over the dimensions whose allocatable is non-zero;
- mostrequested: per dimension `min(req, alloc) * 100 // alloc`, averaged the same way;
- balancedresource: `int((1 - |f_cpu - f_mem| / 2) * 100)`, fractions `req / alloc` capped at 1;
- nodeaffinity: sum of the weights of the matching preferred terms (not normalised, as Volcano);
- tainttoleration (batch): intolerable PreferNoSchedule taints per node, kube's reverse
  normalisation `100 - count * 100 // max_count`; max over every node of the table (not only
  the feasible ones) so one row's score never depends on the others' feasibility.
- podtopologyspread (batch, weight 2): kube's PodTopologySpread score of the task's
  `ScheduleAnyway` constraints, normalised over the scored nodes (`plugins.pod_spread`);
- podaffinity (batch, weight 2): kube's InterPodAffinity score of the task's preferred pod
  (anti-)affinity terms, normalised over the scored nodes.
Both score 0 for a task without such terms, so they never change other tasks' scores.
`req` = node used + task request. Kube's non-zero defaults for request-less pods are not applied.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.signature import Signature
from scheduler_core.plugins.util.node_static import NodeStatic, tolerates
from scheduler_core.plugins.util.pod_index import PodIndex, session_index
from scheduler_core.plugins.util.pod_spread import (
    SOFT,
    constraints,
    pod_affinity_scores,
    preferred_terms,
    spread_scores,
)

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

MAX_NODE_SCORE = 100
DEFAULT_WEIGHTS = {"leastrequested": 1, "mostrequested": 0, "balancedresource": 1,
                   "nodeaffinity": 2, "tainttoleration": 3, "podaffinity": 2, "podtopologyspread": 2}


def _weight(arguments: dict[str, Any], name: str) -> int:
    try:
        return int(arguments.get(f"{name}.weight", DEFAULT_WEIGHTS[name]))
    except (TypeError, ValueError):
        return DEFAULT_WEIGHTS[name]


def _requested(task: TaskInfo, table: NodeTable, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(requested, allocatable) of cpu and memory for rows idx, shape (len(idx), 2)."""
    req = table.used[idx, :2] + np.array([task.resreq.milli_cpu, task.resreq.memory])
    return req, table.allocatable[idx, :2]


def _average(scores: np.ndarray, pos: np.ndarray) -> np.ndarray:
    # Kube skips dimensions with zero allocatable and divides the integer sum by the weight sum.
    n = pos.sum(axis=1)
    total = (scores * pos).sum(axis=1)
    return np.floor_divide(total, np.maximum(n, 1))


def _div(num: np.ndarray, den: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num), where=pos)


def least_requested(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """kube LeastAllocated score per row (cpu and memory weight 1)."""
    pos = alloc > 0
    s = np.floor(_div((alloc - req) * MAX_NODE_SCORE, alloc, pos))
    s[req > alloc] = 0
    return _average(s, pos)


def most_requested(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """kube MostAllocated score per row (requests above allocatable count as allocatable)."""
    pos = alloc > 0
    return _average(np.floor(_div(np.minimum(req, alloc) * MAX_NODE_SCORE, alloc, pos)), pos)


def balanced_resource(req: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """kube BalancedAllocation: (1 - std of the fractions) * 100, truncated."""
    pos = alloc > 0
    frac = np.minimum(_div(req, alloc, pos), 1.0)
    std = np.abs(frac[:, 0] - frac[:, 1]) / 2
    std[~pos.all(axis=1)] = 0.0
    return np.trunc((1 - std) * MAX_NODE_SCORE)


def intolerable_prefer_no_schedule(static: NodeStatic, tolerations: list[dict]) -> np.ndarray:
    """Per row, PreferNoSchedule taints not tolerated (tolerations with effect "" or PreferNoSchedule)."""
    tols = [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    counts = np.zeros(static.n)
    for i, taints in enumerate(static.taints):
        counts[i] = sum(1 for taint in taints if taint.get("effect") == "PreferNoSchedule"
                        and not any(tolerates(t, taint) for t in tols))
    return counts


def taint_toleration_scores(counts: np.ndarray) -> np.ndarray:
    """kube's reverse DefaultNormalizeScore of the intolerable-taint counts."""
    top = counts.max() if len(counts) else 0
    if top == 0:
        return np.full(len(counts), float(MAX_NODE_SCORE))
    return MAX_NODE_SCORE - np.floor_divide(counts * MAX_NODE_SCORE, top)


class NodeOrderPlugin(Plugin):
    """Weighted least/most requested, balanced resource, node affinity and taint scores."""

    name = "nodeorder"

    score_hint = ("emptier nodes (leastrequested), even cpu/memory use (balancedresource), preferred node "
                  "labels (nodeaffinity), no untolerated PreferNoSchedule taints (tainttoleration), "
                  "spread over topology domains (podtopologyspread)")

    # Task fields the scores read: the request, preferred (pod) affinity, tolerations (taints) and
    # spread constraints; labels, namespace and node selector (which nodes' pods count) only where
    # inter-pod terms are scored.
    signature = Signature(("resreq", "affinity", "tolerations", "topology_spread_constraints"),
                          inter_pod=("labels", "namespace", "node_selector"))

    def __init__(self, arguments: dict | None = None) -> None:
        super().__init__(arguments)
        self.weights = {name: _weight(self.arguments, name) for name in DEFAULT_WEIGHTS}
        self._resource_weights = (self.weights["leastrequested"], self.weights["mostrequested"],
                                  self.weights["balancedresource"])
        self.static: NodeStatic | None = None
        self._affinity: dict[str, np.ndarray] = {}
        self._taints: dict[str, np.ndarray] = {}
        self._full: NodeTable | None = None  # the session's NodeTable (views are scored at its rows)
        self.pods: PodIndex | None = None  # matching pods per term and domain, kept by the events

    def affinity_scores(self, task: TaskInfo, static: NodeStatic) -> np.ndarray:
        """Sum of matching preferred node affinity term weights per row (cached per affinity)."""
        key = task.sched_key[3]  # the affinity's canonical text, computed once per task
        hit = self._affinity.get(key)
        if hit is None:
            hit = np.zeros(static.n)
            na = (task.affinity or {}).get("nodeAffinity") or {}
            for term in na.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
                w = int(term.get("weight", 0))
                if w:
                    hit += w * static.term(term.get("preference") or {})
            self._affinity[key] = hit
        return hit

    def taint_scores(self, task: TaskInfo, static: NodeStatic) -> np.ndarray:
        """Normalised taint toleration score per row (cached per tolerations)."""
        key = repr(task.tolerations)
        hit = self._taints.get(key)
        if hit is None:
            hit = taint_toleration_scores(intolerable_prefer_no_schedule(static, task.tolerations))
            self._taints[key] = hit
        return hit

    def _static(self, table: NodeTable) -> NodeStatic:
        # Static facts of the *full* table (built once per session): a view (table.rows set)
        # reads them at its rows, instead of rebuilding them for every few-row view.
        full = table if table.rows is None else self._full
        if full is None:
            raise ValueError("nodeorder: scoring a NodeTable view outside a session")
        if self.static is None or self.static.n != len(full):
            self.static = NodeStatic(full)
            self._affinity.clear()
            self._taints.clear()
        return self.static

    def _row_score(self, task: TaskInfo, table: NodeTable) -> float:
        """score() of a one-row view (the per-placement re-score): the full table's row."""
        return self.row_score(task, int(table.rows[0])) if table.rows is not None else \
            self._resource_row(task, table, 0)

    def _resource_row(self, task: TaskInfo, table: NodeTable, r: int) -> float:
        """Least/most requested and balanced resource of row r in plain floats (no numpy calls).

        Same arithmetic, in the same order, as least_requested / most_requested / balanced_resource.
        """
        wl, wm, wb = self._resource_weights
        used, alloc = table.used, table.allocatable
        a0, a1 = float(alloc[r, 0]), float(alloc[r, 1])
        r0, r1 = float(used[r, 0]) + task.resreq.milli_cpu, float(used[r, 1]) + task.resreq.memory
        total = 0.0
        npos = max((a0 > 0) + (a1 > 0), 1)
        if wl:
            s = 0.0
            if a0 > 0 and r0 <= a0:
                s += math.floor((a0 - r0) * MAX_NODE_SCORE / a0)
            if a1 > 0 and r1 <= a1:
                s += math.floor((a1 - r1) * MAX_NODE_SCORE / a1)
            total += wl * (s // npos)
        if wm:
            s = 0.0
            if a0 > 0:
                s += math.floor(min(r0, a0) * MAX_NODE_SCORE / a0)
            if a1 > 0:
                s += math.floor(min(r1, a1) * MAX_NODE_SCORE / a1)
            total += wm * (s // npos)
        if wb:
            std = 0.0
            if a0 > 0 and a1 > 0:
                std = abs(min(r0 / a0, 1.0) - min(r1 / a1, 1.0)) / 2
            total += wb * math.trunc((1 - std) * MAX_NODE_SCORE)
        return total

    def row_score(self, task: TaskInfo, r: int) -> float:
        """score() of row r of the session's table, in plain floats."""
        full = self._full
        if full is None:
            raise ValueError("nodeorder: row_score outside a session")
        total = self._resource_row(task, full, r)
        if self.weights["nodeaffinity"] and task.affinity:
            total += self.weights["nodeaffinity"] * float(self.affinity_scores(task, self._static(full))[r])
        return total

    def batch_row_score(self, task: TaskInfo, r: int) -> float:
        """batch_score() of row r of the session's table (scored alone, as a one-row mask is)."""
        full = self._full
        if full is None:
            return 0.0
        w = self.weights["tainttoleration"]
        total = float(w * self.taint_scores(task, self._static(full))[r]) if w else 0.0
        if self._pod_terms(task):
            mask = np.zeros(len(full), dtype=bool)
            mask[r] = True
            total += float(self._pod_scores(task, full, mask)[r])
        return total

    def _pod_terms(self, task: TaskInfo) -> bool:
        """The task carries terms the pod-level scores look at (weights on)."""
        if self.weights["podtopologyspread"] and constraints(task, SOFT):
            return True
        return bool(self.weights["podaffinity"] and task.affinity
                    and (preferred_terms(task, "podAffinity") or preferred_terms(task, "podAntiAffinity")))

    def _pod_scores(self, task: TaskInfo, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        """Weighted topology spread and preferred pod affinity scores (rows of `table`)."""
        static = self._static(table)
        out = np.zeros(len(table))
        if self.weights["podtopologyspread"]:
            out += self.weights["podtopologyspread"] * spread_scores(task, table, static, mask, self.pods)
        if self.weights["podaffinity"] and task.affinity:
            out += self.weights["podaffinity"] * pod_affinity_scores(task, table, static, mask, self.pods)
        return out

    def score(self, task: TaskInfo, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        """Weighted resource and node affinity scores; rows outside `mask` score 0."""
        if len(table) == 1 and table.rows is not None:
            return np.array([self._row_score(task, table) if mask[0] else 0.0])
        out = np.zeros(len(table))
        idx = np.flatnonzero(mask)
        if not len(idx):
            return out
        w = self.weights
        if w["leastrequested"] or w["mostrequested"] or w["balancedresource"]:
            req, alloc = _requested(task, table, idx)
            if w["leastrequested"]:
                out[idx] += w["leastrequested"] * least_requested(req, alloc)
            if w["mostrequested"]:
                out[idx] += w["mostrequested"] * most_requested(req, alloc)
            if w["balancedresource"]:
                out[idx] += w["balancedresource"] * balanced_resource(req, alloc)
        if w["nodeaffinity"] and task.affinity:
            full = self.affinity_scores(task, self._static(table))
            out[idx] += w["nodeaffinity"] * (full[idx] if table.rows is None else full[table.rows[idx]])
        return out

    def batch_score(self, task: TaskInfo, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        """Weighted taint toleration, topology spread and pod affinity scores; rows outside `mask` 0."""
        out = np.zeros(len(table))
        if self.weights["tainttoleration"]:
            s = self.taint_scores(task, self._static(table))
            if table.rows is not None:
                s = s[table.rows]
            out = np.where(mask, self.weights["tainttoleration"] * s, 0.0)
        if self._pod_terms(task):
            out += self._pod_scores(task, table, mask)
        return out

    def on_session_open(self, ssn: Session) -> None:
        """Register the node order and batch node order scores."""
        self.static = None
        self._full = ssn.node_table
        self.pods = session_index(ssn)
        ssn.add_node_order_fn(self.name, self.score, row_fn=self.row_score, signature=self.signature)
        ssn.add_batch_node_order_fn(self.name, self.batch_score, row_fn=self.batch_row_score,
                                    signature=self.signature)

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session caches."""
        self.static = self._full = self.pods = None
        self._affinity.clear()
        self._taints.clear()

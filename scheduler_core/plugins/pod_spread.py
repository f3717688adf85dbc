"""Kubernetes inter-pod placement rules over NodeTable rows: topology spread and preferred affinity.

- `spread_failures` is PodTopologySpread's Filter for `whenUnsatisfiable: DoNotSchedule`: for
  each constraint, matching pods (same namespace as the task, the constraint's `labelSelector`
  plus `matchLabelKeys` taken from the task's labels) are counted per `topologyKey` domain over
  the eligible nodes (nodes with every DoNotSchedule key, matching the task's node selector and
  affinity unless `nodeAffinityPolicy: Ignore`, tolerated unless `nodeTaintsPolicy` is not
  Honor); a node is rejected when `count(its domain) + (task matches) - global minimum >
  maxSkew` (the minimum is 0 while fewer than `minDomains` domains exist). A node without a
  constraint's key fails as "missing required label", which eviction cannot fix.
- `spread_scores` is PodTopologySpread's Score for `ScheduleAnyway`: per scored node
  `round(sum(count * log(domains + 2) + maxSkew - 1))`, then `100 * (max + min - s) // max`
  over the scored nodes (nodes lacking a key score 0): the least-skewed domain wins.
  Kubernetes' cluster default constraints (for pods of services) are not applied.
- `pod_affinity_scores` is InterPodAffinity's Score for the task's own preferred terms
  (`podAffinity` adds the term weight to the domains of matching pods, `podAntiAffinity`
  subtracts it), normalised to 0..100 over the scored nodes. Existing pods' preferred terms
  towards the task (kube's symmetric part) are not scored.
Releasing tasks are leaving (terminating pods): they never count.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.model import TaskStatus
from scheduler_core.plugins.node_static import NodeStatic, selector_matches

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.model import NodeInfo, TaskInfo

SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
HARD, SOFT = "DoNotSchedule", "ScheduleAnyway"
MAX_NODE_SCORE = 100


def constraints(task: TaskInfo, when: str) -> list[dict]:
    """The task's topology spread constraints with this `whenUnsatisfiable`."""
    return [c for c in task.topology_spread_constraints or () if c.get("whenUnsatisfiable") == when]


def spread_selector(c: dict, task: TaskInfo) -> dict | None:
    """The constraint's label selector with `matchLabelKeys` values taken from the task's labels."""
    selector = c.get("labelSelector")
    keys = [k for k in c.get("matchLabelKeys") or () if k in task.labels]
    if not keys:
        return selector
    merged = dict(selector or {})
    merged["matchLabels"] = {**(merged.get("matchLabels") or {}), **{k: task.labels[k] for k in keys}}
    return merged


def live_tasks(node: NodeInfo) -> list[TaskInfo]:
    """Tasks holding or awaiting a place on the node (Releasing ones are leaving)."""
    return [t for t in node.tasks.values() if t.status is not TaskStatus.RELEASING]


def _eligible(task: TaskInfo, c: dict, static: NodeStatic, keys: list[str]) -> np.ndarray:
    """Nodes whose pods count for the constraint (kube's node inclusion policies)."""
    ok = np.ones(static.n, dtype=bool)
    for k in keys:
        ok &= static.present(k)
    if (c.get("nodeAffinityPolicy") or "Honor") == "Honor":
        ok &= static.selector_and_affinity(task)
    if (c.get("nodeTaintsPolicy") or "Ignore") == "Honor":
        for _, bad in static.taint_failures(task.tolerations):
            ok &= ~bad
    return ok


def domain_counts(task: TaskInfo, c: dict, static: NodeStatic, nodes: list[NodeInfo],
                  eligible: np.ndarray) -> dict[str, int]:
    """Matching pods per domain value of the constraint's key, over the eligible nodes."""
    key = c.get("topologyKey", "")
    values = static.values(key)
    selector = spread_selector(c, task)
    counts: dict[str, int] = {}
    for row in np.flatnonzero(eligible).tolist():
        v = values[row]
        n = counts.get(v, 0)
        for t in nodes[row].tasks.values():
            if (t.status is not TaskStatus.RELEASING and t.namespace == task.namespace
                    and selector_matches(selector, t.labels)):
                n += 1
        counts[v] = n
    return counts


def spread_failures(task: TaskInfo, table: NodeTable, static: NodeStatic) -> list[tuple[str, np.ndarray]]:
    """(reason, failing rows) of the DoNotSchedule constraints: missing label, then skew."""
    hard = constraints(task, HARD)
    if not hard:
        return []
    keys = [c.get("topologyKey", "") for c in hard]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    out: list[tuple[str, np.ndarray]] = []
    if not has_all.all():
        out.append((SPREAD_MISSING_LABEL, ~has_all))
    skewed = np.zeros(static.n, dtype=bool)
    for c in hard:
        counts = domain_counts(task, c, static, table.nodes, _eligible(task, c, static, keys))
        minimum = min(counts.values()) if counts else 0
        if len(counts) < int(c.get("minDomains") or 0):
            minimum = 0  # fewer domains than asked for: the missing ones count as empty
        self_match = 1 if selector_matches(spread_selector(c, task), task.labels) else 0
        values = static.values(c.get("topologyKey", ""))
        limit = int(c.get("maxSkew", 1)) + minimum - self_match
        for row in np.flatnonzero(has_all).tolist():
            if counts.get(values[row], 0) > limit:
                skewed[row] = True
    if skewed.any():
        out.append((SPREAD_MISMATCH, skewed))
    return out


def spread_scores(task: TaskInfo, table: NodeTable, static: NodeStatic, mask: np.ndarray) -> np.ndarray:
    """Normalised ScheduleAnyway scores (0..100) per row of `table`; rows outside `mask` 0."""
    out = np.zeros(len(table))
    soft = constraints(task, SOFT)
    idx = np.flatnonzero(mask)
    if not soft or not len(idx):
        return out
    full_rows = idx if table.rows is None else table.rows[idx]
    keys = [c.get("topologyKey", "") for c in soft]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    scored = full_rows[has_all[full_rows]]
    nodes = table.nodes if table.rows is None else table._full.nodes  # type: ignore[attr-defined]
    raw = np.zeros(static.n)
    for c in soft:
        key = c.get("topologyKey", "")
        values = static.values(key)
        counts = domain_counts(task, c, static, nodes, _eligible(task, c, static, keys))
        weight = math.log(len({values[r] for r in scored.tolist()}) + 2)
        skew = int(c.get("maxSkew", 1)) - 1
        for r in scored.tolist():
            raw[r] += counts.get(values[r], 0) * weight + skew
    if not len(scored):
        return out
    s = np.round(raw[scored])
    top, low = s.max(), s.min()
    if top == 0:
        norm = np.full(len(scored), float(MAX_NODE_SCORE))
    else:
        norm = np.floor_divide(MAX_NODE_SCORE * (top + low - s), top)
    full = np.zeros(static.n)
    full[scored] = norm
    out[idx] = full[full_rows]
    return out


def preferred_terms(task: TaskInfo, kind: str) -> list[dict]:
    """Weighted preferred terms of `podAffinity` or `podAntiAffinity`."""
    return list(((task.affinity or {}).get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
                or [])


def pod_affinity_scores(task: TaskInfo, table: NodeTable, static: NodeStatic, mask: np.ndarray) -> np.ndarray:
    """Normalised preferred inter-pod (anti-)affinity scores (0..100); rows outside `mask` 0."""
    out = np.zeros(len(table))
    terms = [(t, 1) for t in preferred_terms(task, "podAffinity")]
    terms += [(t, -1) for t in preferred_terms(task, "podAntiAffinity")]
    idx = np.flatnonzero(mask)
    if not terms or not len(idx):
        return out
    full_rows = idx if table.rows is None else table.rows[idx]
    nodes = table.nodes if table.rows is None else table._full.nodes  # type: ignore[attr-defined]
    # topology key -> domain value -> summed weight
    score: dict[str, dict[str, float]] = {}
    for row, node in enumerate(nodes):
        pods = live_tasks(node)
        if not pods:
            continue
        for term, sign in terms:
            weight = int(term.get("weight", 0))
            aff = term.get("podAffinityTerm") or {}
            key = aff.get("topologyKey", "")
            value = static.values(key)[row]
            if not weight or value is None:
                continue
            namespaces = aff.get("namespaces") or [task.namespace]
            hits = sum(1 for p in pods if p.namespace in namespaces
                       and selector_matches(aff.get("labelSelector"), p.labels))
            if hits:
                by_value = score.setdefault(key, {})
                by_value[value] = by_value.get(value, 0.0) + sign * weight * hits
    raw = np.zeros(len(idx))
    for key, by_value in score.items():
        values = static.values(key)
        raw += np.array([by_value.get(values[r], 0.0) for r in full_rows.tolist()])
    diff = raw.max() - raw.min()
    if diff > 0:
        out[idx] = np.trunc(MAX_NODE_SCORE * ((raw - raw.min()) / diff))
    return out

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
Matching pods are counted by the plugin's `pod_index.PodIndex` (per term and topology domain,
kept current by the session's events); called without one, a one-off index is built.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.node_static import NodeStatic, selector_matches
from scheduler_core.plugins.util.pod_index import PodIndex

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


def full_table(table: NodeTable) -> NodeTable:
    """The session's table behind a view (a view's rows index it)."""
    return table if table.rows is None else table._full  # type: ignore[attr-defined]


def index_of(table: NodeTable, static: NodeStatic, pods: PodIndex | None) -> PodIndex:
    """The plugin's session index, or a one-off index of the table's pods (direct calls)."""
    return pods if pods is not None else PodIndex(full_table(table), static)


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


def spread_counts(task: TaskInfo, c: dict, pods: PodIndex,
                  eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(matching pods per domain id of the constraint's key, ids of the domains with an eligible
    row): pods of the task's namespace matching the constraint's selector, on eligible rows."""
    key = c.get("topologyKey", "")
    ids, ndom = pods.domain_ids(key)
    rows, counts = pods.live_rows(pods.term([task.namespace], spread_selector(c, task)))
    per_domain = np.zeros(ndom + 1, dtype=np.int64)
    on = eligible[rows]
    np.add.at(per_domain, ids[rows[on]], counts[on])
    present = np.unique(ids[eligible])
    return per_domain, present[present < ndom]


def spread_failures(task: TaskInfo, table: NodeTable, static: NodeStatic,
                    pods: PodIndex | None = None) -> list[tuple[str, np.ndarray]]:
    """(reason, failing rows) of the DoNotSchedule constraints: missing label, then skew."""
    hard = constraints(task, HARD)
    if not hard:
        return []
    pods = index_of(table, static, pods)
    keys = [c.get("topologyKey", "") for c in hard]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    out: list[tuple[str, np.ndarray]] = []
    if not has_all.all():
        out.append((SPREAD_MISSING_LABEL, ~has_all))
    skewed = np.zeros(static.n, dtype=bool)
    for c in hard:
        per_domain, present = spread_counts(task, c, pods, _eligible(task, c, static, keys))
        minimum = int(per_domain[present].min()) if len(present) else 0
        if len(present) < int(c.get("minDomains") or 0):
            minimum = 0  # fewer domains than asked for: the missing ones count as empty
        self_match = 1 if selector_matches(spread_selector(c, task), task.labels) else 0
        limit = int(c.get("maxSkew", 1)) + minimum - self_match
        # Domains without an eligible row count 0 (their pods are not counted).
        counted = np.zeros(len(per_domain), dtype=np.int64)
        counted[present] = per_domain[present]
        ids, _ = pods.domain_ids(c.get("topologyKey", ""))
        skewed |= has_all & (counted[ids] > limit)
    if skewed.any():
        out.append((SPREAD_MISMATCH, skewed))
    return out


def spread_scores(task: TaskInfo, table: NodeTable, static: NodeStatic, mask: np.ndarray,
                  pods: PodIndex | None = None) -> np.ndarray:
    """Normalised ScheduleAnyway scores (0..100) per row of `table`; rows outside `mask` 0."""
    out = np.zeros(len(table))
    soft = constraints(task, SOFT)
    idx = np.flatnonzero(mask)
    if not soft or not len(idx):
        return out
    pods = index_of(table, static, pods)
    full_rows = idx if table.rows is None else table.rows[idx]
    keys = [c.get("topologyKey", "") for c in soft]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    scored = full_rows[has_all[full_rows]]
    raw = np.zeros(static.n)
    for c in soft:
        per_domain, present = spread_counts(task, c, pods, _eligible(task, c, static, keys))
        counted = np.zeros(len(per_domain), dtype=np.int64)
        counted[present] = per_domain[present]
        ids, _ = pods.domain_ids(c.get("topologyKey", ""))
        weight = math.log(len(np.unique(ids[scored])) + 2)
        skew = int(c.get("maxSkew", 1)) - 1
        # Row by row the same float operations as one `+=` per row and constraint.
        raw[scored] += counted[ids[scored]] * weight + skew
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


def weighted_terms(task: TaskInfo) -> list[tuple[dict, int]]:
    """The task's preferred pod terms with their signed weight (anti-affinity negative)."""
    terms = [(t, 1) for t in preferred_terms(task, "podAffinity")]
    terms += [(t, -1) for t in preferred_terms(task, "podAntiAffinity")]
    return terms


def pod_affinity_scores(task: TaskInfo, table: NodeTable, static: NodeStatic, mask: np.ndarray,
                        pods: PodIndex | None = None) -> np.ndarray:
    """Normalised preferred inter-pod (anti-)affinity scores (0..100); rows outside `mask` 0.

    Per topology key, the signed weights times the matching pods of each domain are summed over
    the terms (`PodIndex.weighted`: made once per task class from the domain counts, then moved
    by each placement's event), then read at the scored rows: keys x rows per call, the same
    integers kube's per-node accumulation gives.
    """
    out = np.zeros(len(table))
    idx = np.flatnonzero(mask)
    if not len(idx):
        return out
    # One sum per (namespace, affinity): identical tasks share it, and the events keep it current.
    # Looked up before the terms are listed: a class asked again (every refresh of a gang's
    # class) costs no walk over its terms.
    memo_key = ("preferred", task.namespace, task.sched_key[3])
    weighted = pods.memo.get(memo_key) if pods is not None else None
    if weighted is None:
        terms = weighted_terms(task)
        if not terms:
            return out
        pods = index_of(table, static, pods)
        weighted = pods.memo.get(memo_key)
    full_rows = idx if table.rows is None else table.rows[idx]
    if weighted is None:
        specs = []
        for term, sign in terms:
            weight = int(term.get("weight", 0))
            if weight:
                aff = term.get("podAffinityTerm") or {}
                specs.append((aff.get("namespaces") or [task.namespace], aff.get("labelSelector"),
                              aff.get("topologyKey", ""), sign * weight))
        weighted = pods.weighted(memo_key, specs)
    raw = np.zeros(len(idx))
    for key, per_domain in weighted.sums.items():
        raw += pods.per_row(per_domain, key)[full_rows]
    diff = raw.max() - raw.min()
    if diff > 0:
        out[idx] = np.trunc(MAX_NODE_SCORE * ((raw - raw.min()) / diff))
    return out

"""Straightforward inter-pod rules: every term against every pod of every node, per question.

The pre-index implementation of `plugins.pod_spread` and of the predicates' required pod
(anti-)affinity, kept as the reference the indexed code must equal (`test_pod_index.py`).
"""

from __future__ import annotations

import math

import numpy as np

from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.node_static import NodeStatic, pod_terms, selector_matches, term_matches
from scheduler_core.plugins.util.pod_spread import (
    HARD,
    MAX_NODE_SCORE,
    SOFT,
    SPREAD_MISMATCH,
    SPREAD_MISSING_LABEL,
    _eligible,
    constraints,
    preferred_terms,
    spread_selector,
)


def live(node):
    return [t for t in node.tasks.values() if t.status is not TaskStatus.RELEASING]


def domain_counts(task, c, static, nodes, eligible) -> dict:
    key = c.get("topologyKey", "")
    values = static.values(key)
    selector = spread_selector(c, task)
    counts: dict = {}
    for row in np.flatnonzero(eligible).tolist():
        v = values[row]
        n = counts.get(v, 0)
        for t in nodes[row].tasks.values():
            if (t.status is not TaskStatus.RELEASING and t.namespace == task.namespace
                    and selector_matches(selector, t.labels)):
                n += 1
        counts[v] = n
    return counts


def spread_failures(task, table, static: NodeStatic):
    hard = constraints(task, HARD)
    if not hard:
        return []
    keys = [c.get("topologyKey", "") for c in hard]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    out = []
    if not has_all.all():
        out.append((SPREAD_MISSING_LABEL, ~has_all))
    skewed = np.zeros(static.n, dtype=bool)
    for c in hard:
        counts = domain_counts(task, c, static, table.nodes, _eligible(task, c, static, keys))
        minimum = min(counts.values()) if counts else 0
        if len(counts) < int(c.get("minDomains") or 0):
            minimum = 0
        self_match = 1 if selector_matches(spread_selector(c, task), task.labels) else 0
        values = static.values(c.get("topologyKey", ""))
        limit = int(c.get("maxSkew", 1)) + minimum - self_match
        for row in np.flatnonzero(has_all).tolist():
            if counts.get(values[row], 0) > limit:
                skewed[row] = True
    if skewed.any():
        out.append((SPREAD_MISMATCH, skewed))
    return out


def spread_scores(task, table, static, mask):
    out = np.zeros(len(table))
    soft = constraints(task, SOFT)
    idx = np.flatnonzero(mask)
    if not soft or not len(idx):
        return out
    keys = [c.get("topologyKey", "") for c in soft]
    has_all = np.ones(static.n, dtype=bool)
    for k in keys:
        has_all &= static.present(k)
    scored = idx[has_all[idx]]
    raw = np.zeros(static.n)
    for c in soft:
        values = static.values(c.get("topologyKey", ""))
        counts = domain_counts(task, c, static, table.nodes, _eligible(task, c, static, keys))
        weight = math.log(len({values[r] for r in scored.tolist()}) + 2)
        skew = int(c.get("maxSkew", 1)) - 1
        for r in scored.tolist():
            raw[r] += counts.get(values[r], 0) * weight + skew
    if not len(scored):
        return out
    s = np.round(raw[scored])
    top, low = s.max(), s.min()
    norm = (np.full(len(scored), float(MAX_NODE_SCORE)) if top == 0
            else np.floor_divide(MAX_NODE_SCORE * (top + low - s), top))
    out[scored] = norm
    return out


def pod_affinity_scores(task, table, static, mask):
    out = np.zeros(len(table))
    terms = [(t, 1) for t in preferred_terms(task, "podAffinity")]
    terms += [(t, -1) for t in preferred_terms(task, "podAntiAffinity")]
    idx = np.flatnonzero(mask)
    if not terms or not len(idx):
        return out
    score: dict = {}
    for row, node in enumerate(table.nodes):
        pods = live(node)
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
        raw += np.array([by_value.get(values[r], 0.0) for r in idx.tolist()])
    diff = raw.max() - raw.min()
    if diff > 0:
        out[idx] = np.trunc(MAX_NODE_SCORE * ((raw - raw.min()) / diff))
    return out


def pod_affinity_failures(task, table, static, anti_holders, only_affinity=False):
    """The predicates plugin's required inter-pod filter, pod by pod."""
    from scheduler_core.plugins.predicates.predicates import (
        EXISTING_ANTI_AFFINITY,
        POD_AFFINITY,
        POD_ANTI_AFFINITY,
    )

    out = []
    if not only_affinity:
        bad = np.zeros(len(table), dtype=bool)
        for holder in list(anti_holders.values()):
            row = table.index.get(holder.node_name) if holder.node_name else None
            if row is None or holder.uid not in table.nodes[row].tasks:
                continue
            for term in pod_terms(holder, "podAntiAffinity"):
                if term_matches(term, holder, task):
                    bad |= static.domain(term.get("topologyKey", ""), [row])
        if bad.any():
            out.append((EXISTING_ANTI_AFFINITY, bad))
    affinity, anti = pod_terms(task, "podAffinity"), pod_terms(task, "podAntiAffinity")
    if only_affinity:
        anti = []
    if not affinity and not anti:
        return out
    pods = [(i, t) for i, n in enumerate(table.nodes) for t in n.tasks.values()]
    if affinity:
        fail = np.zeros(len(table), dtype=bool)
        for term in affinity:
            rows = [i for i, t in pods if term_matches(term, task, t)]
            key = term.get("topologyKey", "")
            if rows:
                fail |= ~static.domain(key, rows)
            elif not term_matches(term, task, task):
                fail[:] = True
            else:
                fail |= ~static.present(key)
        if fail.any():
            out.append((POD_AFFINITY, fail))
    fail = np.zeros(len(table), dtype=bool)
    for term in anti:
        rows = [i for i, t in pods if term_matches(term, task, t)]
        if rows:
            fail |= static.domain(term.get("topologyKey", ""), rows)
    if fail.any():
        out.append((POD_ANTI_AFFINITY, fail))
    return out


def row_failure(plugin, task, row, table, static):
    """predicate_rows.resolvable_row_failure, pod by pod (Releasing tasks counted as gone)."""
    from scheduler_core.plugins.predicates.predicates import (
        EXISTING_ANTI_AFFINITY,
        POD_ANTI_AFFINITY,
        TOO_MANY_PODS,
    )
    from scheduler_core.plugins.predicates.rows import live_pod_count

    def domain_rows(key):
        return np.flatnonzero(static.domain(key, [row])).tolist()

    limit = int(table.max_pods[row])
    if limit > 0 and live_pod_count(table, row) >= limit:
        return TOO_MANY_PODS
    if plugin.pod_affinity_on:
        for holder in plugin.anti_holders.values():
            if holder.status is TaskStatus.RELEASING or holder.node_name is None:
                continue
            hrow = table.index.get(holder.node_name)
            if hrow is None or holder.uid not in table.nodes[hrow].tasks:
                continue
            for term in pod_terms(holder, "podAntiAffinity"):
                if term_matches(term, holder, task) and hrow in domain_rows(term.get("topologyKey", "")):
                    return EXISTING_ANTI_AFFINITY
        for term in pod_terms(task, "podAntiAffinity"):
            for r in domain_rows(term.get("topologyKey", "")):
                for t in table.nodes[r].tasks.values():
                    if t.status is not TaskStatus.RELEASING and term_matches(term, task, t):
                        return POD_ANTI_AFFINITY
    if plugin.spread_on and task.topology_spread_constraints:
        for reason, mask in spread_failures(task, table, static):
            if reason == SPREAD_MISMATCH and mask[row]:
                return SPREAD_MISMATCH
    if plugin.proportional:
        for reason, mask in plugin.proportional_failures(task, table):
            if mask[row]:
                return reason
    return None

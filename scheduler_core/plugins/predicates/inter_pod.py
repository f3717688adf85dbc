"""kube's InterPodAffinity filter on one row with some tasks taken away: the predicates plugin's
simulated test for topology-aware preemption's dry runs (`PredicateFacets.inter_pod`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.plugins.util.node_static import NodeStatic, pod_terms, term_matches

if TYPE_CHECKING:
    from scheduler_core.model import TaskInfo


def inter_pod_violation(task: TaskInfo, row: int, nodes: list, static: NodeStatic, anti_holders: Any,
                        gone: Callable[[TaskInfo], bool]) -> bool:
    """kube's InterPodAffinity filter on one row, with the tasks `gone` says left taken away:
    an existing pod's required anti-affinity, the task's own required anti-affinity, or its
    required pod affinity unmet (the first pod of a self-affine group may go anywhere its
    topology key exists)."""
    index = {n.name: i for i, n in enumerate(nodes)} if anti_holders else {}
    for holder in anti_holders:
        hrow = index.get(holder.node_name) if holder.node_name else None
        if hrow is None or holder.uid not in nodes[hrow].tasks or gone(holder):
            continue
        for term in pod_terms(holder, "podAntiAffinity"):
            if term_matches(term, holder, task) and static.domain(term.get("topologyKey", ""), [hrow])[row]:
                return True
    for term in pod_terms(task, "podAntiAffinity"):
        for r in np.flatnonzero(static.domain(term.get("topologyKey", ""), [row])).tolist():
            if any(not gone(t) and term_matches(term, task, t) for t in nodes[r].tasks.values()):
                return True
    for term in pod_terms(task, "podAffinity"):
        key = term.get("topologyKey", "")
        matching = [r for r, n in enumerate(nodes)
                    if any(not gone(t) and term_matches(term, task, t) for t in n.tasks.values())]
        if matching:
            if not static.domain(key, matching)[row]:
                return True
        elif not (term_matches(term, task, task) and static.present(key)[row]):
            return True
    return False

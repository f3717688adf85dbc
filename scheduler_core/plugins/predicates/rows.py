"""One-row re-check of the predicates eviction can fix (preempt and reclaim, docs/semantics.md section 5).

After each tentative eviction the preemptor's node is asked again, with the Releasing tasks
(the victims, and any task already leaving) counted as gone: from the pod count, from inter-pod
anti-affinity (both the task's own terms and the existing pods' terms) and from the topology
spread counts; the proportional check is asked as in the full predicate. Everything here looks
at one row and at the pods of its topology domains only, never at every node, except the
spread counts of a task that carries DoNotSchedule constraints (they need the global minimum);
the task's own anti-affinity reads the plugin's pod index (live pods per term and domain).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.node_static import NodeStatic, pod_terms, term_matches
from scheduler_core.plugins.util.pod_index import PodIndex
from scheduler_core.plugins.util.pod_spread import SPREAD_MISMATCH, index_of, spread_failures

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.model import TaskInfo
    from scheduler_core.plugins.predicates.predicates import PredicatesPlugin

RELEASING = TaskStatus.RELEASING


def live_pod_count(table: NodeTable, row: int) -> int:
    """Pods on the row that are not leaving (pipelined ones hold their slot)."""
    node = table.nodes[row]
    return sum(1 for t in node.tasks.values() if t.status is not RELEASING)


def _existing_anti(plugin: PredicatesPlugin, task: TaskInfo, row: int, table: NodeTable,
                   static: NodeStatic) -> bool:
    """Some staying pod in the row's domain has a required anti-affinity term selecting the task.

    Holders are grouped by (namespace, affinity) with the rows of their staying members (kept
    until a holder moves): each group's terms are matched once, then only domain values compared.
    """
    for rep, rows in _staying_groups(plugin, table).values():
        for term in pod_terms(rep, "podAntiAffinity"):
            if not term_matches(term, rep, task):
                continue
            values = static.values(term.get("topologyKey", ""))
            v = values[row]
            if v is not None and any(values[h] == v for h in rows):
                return True
    return False


def _staying_groups(plugin: PredicatesPlugin, table: NodeTable) -> dict[tuple, tuple[TaskInfo, list[int]]]:
    """Anti-affinity holders on their node and not leaving, by (namespace, affinity)."""
    cached = plugin.staying
    if cached is not None and cached[0] == plugin._anti_version:
        return cached[1]
    groups: dict[tuple, tuple[TaskInfo, list[int]]] = {}
    for holder in plugin.anti_holders.values():
        if holder.status is RELEASING or holder.node_name is None:
            continue
        hrow = table.index.get(holder.node_name)
        if hrow is None or holder.uid not in table.nodes[hrow].tasks:
            continue
        groups.setdefault((holder.namespace, holder.sched_key[3]), (holder, []))[1].append(hrow)
    plugin.staying = (plugin._anti_version, groups)
    return groups


def _own_anti(task: TaskInfo, row: int, pods: PodIndex) -> bool:
    """A staying pod in the row's domain matches one of the task's required anti-affinity terms
    (the index's live count of that domain: Releasing pods are leaving)."""
    for term in pod_terms(task, "podAntiAffinity"):
        t = pods.term(term.get("namespaces") or [task.namespace], term.get("labelSelector"))
        if not t.total:
            continue
        key = term.get("topologyKey", "")
        ids, ndom = pods.domain_ids(key)
        d = int(ids[row])
        if d < ndom and pods.domain_counts(t, key)[0][d] > 0:
            return True
    return False


def resolvable_row_failure(plugin: PredicatesPlugin, task: TaskInfo, row: int, table: NodeTable,
                           static: NodeStatic) -> str | None:
    """First fixable failure of the row (Releasing tasks gone), or None."""
    from scheduler_core.plugins.predicates.predicates import (
        EXISTING_ANTI_AFFINITY,
        POD_ANTI_AFFINITY,
        TOO_MANY_PODS,
    )

    limit = int(table.max_pods[row])
    if limit > 0 and live_pod_count(table, row) >= limit:
        return TOO_MANY_PODS
    if plugin.pod_affinity_on:
        if plugin.anti_holders and _existing_anti(plugin, task, row, table, static):
            return EXISTING_ANTI_AFFINITY
        if _own_anti(task, row, index_of(table, static, plugin.pods)):
            return POD_ANTI_AFFINITY
    if plugin.spread_on and task.topology_spread_constraints:
        for reason, mask in spread_failures(task, table, static, plugin.pods):
            if reason == SPREAD_MISMATCH and mask[row]:
                return SPREAD_MISMATCH
    if plugin.proportional:
        for reason, mask in plugin.proportional_failures(task, table):
            if mask[row]:
                return reason
    return None

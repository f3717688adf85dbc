"""predicates plugin: node filters, vectorised over NodeTable rows (Volcano's `predicates`).

Checked in this order (a node is blamed on the first that fails it):
1. unschedulable node -> "node(s) were unschedulable";
2. node selector and required node affinity (nodeSelectorTerms, operators In / NotIn / Exists /
   DoesNotExist / Gt / Lt, matchFields on metadata.name) -> "node(s) didn't match Pod's node
   affinity/selector" (switch `predicate.NodeAffinityEnable`);
3. NoSchedule / NoExecute taints not tolerated -> "node(s) had untolerated taint {key: value}",
   grouped by each node's first untolerated taint (switch `predicate.TaintTolerationEnable`);
4. pod count -> "Too many pods" (a node whose allocatable has no `pods` has no limit);
5. required inter-pod affinity (switch `predicate.PodAffinityEnable`, kube's InterPodAffinity
   filter over the tasks on the nodes, session placements included): "node(s) didn't satisfy
   existing pods anti-affinity rules", "node(s) didn't match pod affinity rules",
   "node(s) didn't match pod anti-affinity rules";
6. topology spread `whenUnsatisfiable: DoNotSchedule` (switch `predicate.PodTopologySpreadEnable`,
   kube's PodTopologySpread filter, `plugins.pod_spread`): "node(s) didn't match pod topology
   spread constraints (missing required label)", "node(s) didn't match pod topology spread
   constraints";
7. `predicate.ProportionalEnable`: for each resource in `predicate.resources`, a task that does
   not request it must leave `rate * idle` of cpu (`.cpu`, cores per unit) and memory (`.memory`,
   GB per unit) on the node -> "proportional of resource <name> check failed".
Steps 1-3 depend only on the task's sched_key and static node data: cached per key.
Preempt and reclaim (docs/semantics.md section 5) keep as candidates the nodes that fail only on what
eviction can fix: `unresolvable_failures` lists the rest, and `row_failure` re-checks one node
after each tentative eviction, Releasing tasks counted as gone. Both are declared with the
predicate as its facets (`PredicateFacets`), with steps 1-3 alone (`node_facts`, the never-fits
explanation) and, while pod affinity is on, topology-aware preemption's simulated inter-pod test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.extension_points import PredicateFacets
from scheduler_core.framework.interface import Event, EventHandler, Plugin
from scheduler_core.framework.signature import Signature
from scheduler_core.plugins.predicates.inter_pod import inter_pod_violation
from scheduler_core.plugins.predicates.messages import (
    AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    TOO_MANY_PODS,
    UNSCHEDULABLE,
)
from scheduler_core.plugins.predicates.rows import resolvable_row_failure
from scheduler_core.plugins.util.node_static import (  # noqa: F401  (re-exported: plugins and tests import them here)
    FILTERED_EFFECTS,
    Masks,
    NodeStatic,
    pod_terms,
    selector_matches,
    taint_reason,
    term_matches,
    tolerates,
)
from scheduler_core.plugins.util.pod_index import PodIndex, session_index
from scheduler_core.plugins.util.pod_spread import SPREAD_MISSING_LABEL, index_of, spread_failures

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

def arg_bool(arguments: dict[str, Any], key: str, default: bool) -> bool:
    """A boolean argument (YAML bool or a "true"/"false" string)."""
    v = arguments.get(key, default)
    if isinstance(v, str):
        return v.strip().lower() == "true"
    return bool(v)


def arg_float(arguments: dict[str, Any], key: str, default: float) -> float:
    """A numeric argument; missing or unparsable keeps the default."""
    try:
        return float(arguments.get(key, default))
    except (TypeError, ValueError):
        return default



class PredicatesPlugin(Plugin):
    """Vectorised node filters with a per-session cache of the static part."""

    name = "predicates"

    # Task fields the predicate reads: selectors, affinity, tolerations, spread constraints and the
    # request (proportional); labels and namespace only where inter-pod terms match them.
    signature = Signature(
        ("resreq", "node_selector", "tolerations", "affinity", "topology_spread_constraints"),
        inter_pod=("labels", "namespace"))

    def __init__(self, arguments: dict | None = None) -> None:
        super().__init__(arguments)
        a = self.arguments
        self.affinity_on = arg_bool(a, "predicate.NodeAffinityEnable", True)
        self.taints_on = arg_bool(a, "predicate.TaintTolerationEnable", True)
        self.pod_affinity_on = arg_bool(a, "predicate.PodAffinityEnable", True)
        self.spread_on = arg_bool(a, "predicate.PodTopologySpreadEnable", True)
        # Tasks on nodes that carry required pod anti-affinity (checked against every newcomer).
        self.anti_holders: dict[str, TaskInfo] = {}
        self.proportional: dict[str, tuple[float, float]] = {}
        if arg_bool(a, "predicate.ProportionalEnable", False):
            for name in str(a.get("predicate.resources", "") or "").split(","):
                name = name.strip()
                if not name:
                    continue
                cpu = arg_float(a, f"predicate.resources.{name}.cpu", 1.0)
                mem = arg_float(a, f"predicate.resources.{name}.memory", 1.0)
                # Volcano resets negative rates to 1.
                self.proportional[name] = (cpu if cpu >= 0 else 1.0, mem if mem >= 0 else 1.0)
        self.static: NodeStatic | None = None
        self.pods: PodIndex | None = None  # matching pods per term and domain, kept by the events
        # Existing anti-affinity: bumped whenever a holder moves; answers and groups per version.
        self._anti_version = 0
        self._anti_cache: dict[tuple, tuple[int, np.ndarray]] = {}
        self._groups: tuple[int, dict] | None = None
        self.staying: tuple[int, dict] | None = None  # predicate_rows' holders not leaving, per version
        self._cache: dict[tuple, Masks] = {}
        # Tolerations of 10,000 tasks usually repeat: their taint groups are cached separately.
        self._taint_cache: dict[str, Masks] = {}

    def static_failures(self, task: TaskInfo, static: NodeStatic) -> Masks:
        """Unschedulable, selector/affinity and taint failures (cached per sched_key)."""
        key = task.sched_key
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        out: Masks = []
        if not static.schedulable.all():
            out.append((UNSCHEDULABLE, ~static.schedulable))
        if self.affinity_on:
            bad = ~static.selector_and_affinity(task)
            if bad.any():
                out.append((AFFINITY_MISMATCH, bad))
        if self.taints_on:
            tkey = repr(task.tolerations)
            taints = self._taint_cache.get(tkey)
            if taints is None:
                taints = self._taint_cache[tkey] = static.taint_failures(task.tolerations)
            out.extend(taints)
        for _, m in out:
            m.flags.writeable = False
        self._cache[key] = out
        return out

    def proportional_failures(self, task: TaskInfo, table: NodeTable) -> Masks:
        """Volcano's checkNodeResourceIsProportional over all rows."""
        if any(task.resreq.get(name) > 0 for name in self.proportional):
            return []
        out: Masks = []
        failed = np.zeros(len(table), dtype=bool)
        for name in sorted(self.proportional):
            j = table.dim_index.get(name)
            if j is None:
                continue
            rate_cpu, rate_mem = self.proportional[name]
            idle = table.idle
            value = idle[:, j]
            cpu_left = idle[:, 0] - task.resreq.milli_cpu
            mem_left = idle[:, 1] - task.resreq.memory
            bad = ((cpu_left < value * rate_cpu) | (mem_left < value * rate_mem * 1e6)) & ~failed
            if bad.any():
                out.append((f"proportional of resource {name} check failed", bad))
                failed |= bad
        return out

    def pod_affinity_failures(self, task: TaskInfo, table: NodeTable, static: NodeStatic,
                              only_affinity: bool = False) -> Masks:
        """kube's InterPodAffinity filter: existing anti-affinity, then the task's own terms.

        `only_affinity`: just the task's required pod affinity (what no eviction can fix).
        Pods matching the task's terms come from the pod index (per term and domain, Releasing
        pods included: they still hold their place), not from a walk over every pod.
        """
        out: Masks = []
        if not only_affinity and self.anti_holders:
            bad = self.existing_anti(task, table, static)
            if bad.any():
                out.append((EXISTING_ANTI_AFFINITY, bad))
        affinity, anti = pod_terms(task, "podAffinity"), pod_terms(task, "podAntiAffinity")
        if only_affinity:
            anti = []
        if not affinity and not anti:
            return out
        pods = index_of(table, static, self.pods)

        def occupied(term: dict) -> np.ndarray | None:
            # Rows whose domain holds a matching pod (None: no matching pod anywhere).
            # The task itself is not excluded: actions ask with one representative of a class
            # of identical tasks, which may already sit on a node for its siblings.
            t = pods.term(term.get("namespaces") or [task.namespace], term.get("labelSelector"))
            if not t.total:
                return None
            key = term.get("topologyKey", "")
            live, leaving = pods.domain_counts(t, key)
            return pods.per_row(live + leaving, key) > 0

        if affinity:
            fail = np.zeros(len(table), dtype=bool)
            for term in affinity:
                rows = occupied(term)
                if rows is not None:
                    fail |= ~rows
                elif not term_matches(term, task, task):
                    fail[:] = True
                else:
                    # First pod of a self-affine group: any node with the topology key will do.
                    fail |= ~static.present(term.get("topologyKey", ""))
            if fail.any():
                out.append((POD_AFFINITY, fail))
        fail = np.zeros(len(table), dtype=bool)
        for term in anti:
            rows = occupied(term)
            if rows is not None:
                fail |= rows
        if fail.any():
            out.append((POD_ANTI_AFFINITY, fail))
        return out

    def existing_anti(self, task: TaskInfo, table: NodeTable, static: NodeStatic) -> np.ndarray:
        """Rows in the domain of a placed pod whose required anti-affinity selects the task.

        Holders are grouped by (namespace, affinity): a group's terms are matched once against
        the task's namespace and labels, and the answer is kept per such task class until a
        holder is placed or removed (`_anti_version`).
        """
        ckey = (task.namespace, tuple(sorted(task.labels.items())))
        hit = self._anti_cache.get(ckey)
        if hit is not None and hit[0] == self._anti_version:
            return hit[1]
        bad = np.zeros(len(table), dtype=bool)
        for rep, rows in self._anti_groups(table).values():
            for term in pod_terms(rep, "podAntiAffinity"):
                if term_matches(term, rep, task):
                    bad |= static.domain(term.get("topologyKey", ""), rows)
        bad.flags.writeable = False
        self._anti_cache[ckey] = (self._anti_version, bad)
        return bad

    def _anti_groups(self, table: NodeTable) -> dict[tuple, tuple[TaskInfo, list[int]]]:
        """Holders still on their node, by (namespace, affinity): a representative and the rows."""
        if self._groups is not None and self._groups[0] == self._anti_version:
            return self._groups[1]
        groups: dict[tuple, tuple[TaskInfo, list[int]]] = {}
        for holder in list(self.anti_holders.values()):
            row = table.index.get(holder.node_name) if holder.node_name else None
            if row is None or holder.uid not in table.nodes[row].tasks:
                continue  # moved off its node (discarded) since it was recorded
            entry = groups.setdefault((holder.namespace, holder.sched_key[3]), (holder, []))
            entry[1].append(row)
        self._groups = (self._anti_version, groups)
        return groups

    def _static_of(self, table: NodeTable) -> NodeStatic:
        static = self.static
        if static is None or static.n != len(table):
            static = self.static = NodeStatic(table)
        return static

    def unresolvable_failures(self, task: TaskInfo, table: NodeTable) -> Masks:
        """Failures no eviction can fix (preempt and reclaim candidates): unschedulable, node
        selector / affinity, untolerated taints, unmatched required pod affinity, a missing
        topology spread key."""
        static = self._static_of(table)
        out = list(self.static_failures(task, static))
        if self.pod_affinity_on and pod_terms(task, "podAffinity"):
            out.extend(self.pod_affinity_failures(task, table, static, only_affinity=True))
        if self.spread_on and task.topology_spread_constraints:
            out.extend(f for f in spread_failures(task, table, static, self.pods)
                       if f[0] == SPREAD_MISSING_LABEL)
        return out

    def row_failure(self, task: TaskInfo, row: int, table: NodeTable) -> str | None:
        """The first failure eviction could fix on one row, Releasing tasks counted as gone (the
        re-check after each tentative eviction): pod count, inter-pod anti-affinity, topology
        spread skew, proportional; None when the row passes them."""
        return resolvable_row_failure(self, task, row, table, self._static_of(table))

    def on_session_open(self, ssn: Session) -> None:
        """Build the static node view and register the predicate."""
        self.static = NodeStatic(ssn.node_table)
        self._cache.clear()
        self._taint_cache.clear()
        self.anti_holders = {t.uid: t for n in ssn.node_table.nodes for t in n.tasks.values()
                             if t.affinity and pod_terms(t, "podAntiAffinity")}
        self._anti_version, self._groups, self.staying = 0, None, None
        self._anti_cache.clear()
        self.pods = session_index(ssn)

        def on_allocate(ev: Event) -> None:
            if pod_terms(ev.task, "podAntiAffinity"):
                self.anti_holders[ev.task.uid] = ev.task
                self._anti_version += 1

        def on_deallocate(ev: Event) -> None:
            if ev.task.uid in self.anti_holders:
                self._anti_version += 1

        ssn.add_event_handler(EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate))

        def predicate(task: TaskInfo, table: NodeTable) -> Masks:
            static = self._static_of(table)
            out = list(self.static_failures(task, static))
            limited = table.max_pods > 0
            too_many = limited & (table.pod_count >= table.max_pods)
            if too_many.any():
                out.append((TOO_MANY_PODS, too_many))
            if self.pod_affinity_on:
                out.extend(self.pod_affinity_failures(task, table, static))
            if self.spread_on and task.topology_spread_constraints:
                out.extend(spread_failures(task, table, static, self.pods))
            if self.proportional:
                out.extend(self.proportional_failures(task, table))
            return out

        table = ssn.node_table

        def inter_pod(task: TaskInfo, row: int, gone: Callable[[TaskInfo], bool]) -> bool:
            return inter_pod_violation(task, row, table.nodes, self.static or NodeStatic(table),
                                       self.anti_holders.values(), gone)

        def node_facts(task: TaskInfo, table: NodeTable) -> Masks:
            return self.static_failures(task, self._static_of(table))

        # What preempt, reclaim and the explanations ask of the predicate (module docstring).
        facets = PredicateFacets(unresolvable=self.unresolvable_failures, row_failure=self.row_failure,
                                 node_facts=node_facts, inter_pod=inter_pod if self.pod_affinity_on else None)
        # Not static: the pod count and idle resources change within the session.
        ssn.add_predicate_fn(self.name, predicate, static=False, signature=self.signature, facets=facets)

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session caches."""
        self.static = self.pods = None
        self._cache.clear()
        self._taint_cache.clear()
        self.anti_holders.clear()
        self._anti_cache.clear()
        self._groups = self.staying = None

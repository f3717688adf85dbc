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
6. `predicate.ProportionalEnable`: for each resource in `predicate.resources`, a task that does
   not request it must leave `rate * idle` of cpu (`.cpu`, cores per unit) and memory (`.memory`,
   GB per unit) on the node -> "proportional of resource <name> check failed".
Steps 1-3 depend only on the task's sched_key and static node data: cached per key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.interface import Event, EventHandler, Plugin
from scheduler_core.framework.registry import register_plugin

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
FILTERED_EFFECTS = ("NoSchedule", "NoExecute")

Masks = list[tuple[str, np.ndarray]]


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


def tolerates(toleration: dict, taint: dict) -> bool:
    """Kubernetes' Toleration.ToleratesTaint (empty effect matches all, Exists ignores value)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def taint_reason(taint: dict) -> str:
    """Kubernetes' wording for an untolerated taint."""
    return f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '') or ''}}}"


def selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """Kubernetes LabelSelector on pod labels (None matches nothing, {} matches everything)."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), [str(v) for v in e.get("values") or []]
        has = key in labels
        if op == "In" and not (has and labels[key] in values):
            return False
        if op == "NotIn" and has and labels[key] in values:
            return False
        if (op == "Exists" and not has) or (op == "DoesNotExist" and has):
            return False
    return True


def pod_terms(task: TaskInfo, kind: str) -> list[dict]:
    """Required terms of `podAffinity` or `podAntiAffinity` of a task."""
    return list(((task.affinity or {}).get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
                or [])


def term_matches(term: dict, owner: TaskInfo, pod: TaskInfo) -> bool:
    """A pod (anti-)affinity term of `owner` selects `pod` (namespaces default to owner's)."""
    namespaces = term.get("namespaces") or [owner.namespace]
    return pod.namespace in namespaces and selector_matches(term.get("labelSelector"), pod.labels)


class NodeStatic:
    """Static node facts (names, labels, taints) as lazily built boolean columns over rows."""

    def __init__(self, table: NodeTable) -> None:
        self.n = len(table)
        self.names = np.array(table.names, dtype=object)
        self.labels = [node.labels for node in table.nodes]
        self.taints = [list(node.taints) for node in table.nodes]
        self.schedulable = table.schedulable.copy()
        self._present: dict[str, np.ndarray] = {}
        self._values: dict[str, np.ndarray] = {}
        self._eq: dict[tuple[str, str], np.ndarray] = {}

    def present(self, key: str) -> np.ndarray:
        """Rows whose node has label `key`."""
        m = self._present.get(key)
        if m is None:
            m = self._present[key] = np.fromiter((key in lb for lb in self.labels), bool, self.n)
        return m

    def values(self, key: str) -> np.ndarray:
        """Label `key` per row (None where absent), object array."""
        v = self._values.get(key)
        if v is None:
            v = np.empty(self.n, dtype=object)
            v[:] = [lb.get(key) for lb in self.labels]
            self._values[key] = v
        return v

    def equals(self, key: str, value: str) -> np.ndarray:
        """Rows whose label `key` equals `value`."""
        m = self._eq.get((key, value))
        if m is None:
            m = self._eq[(key, value)] = self.values(key) == str(value)
        return np.asarray(m, dtype=bool)

    def label_in(self, key: str, values: list) -> np.ndarray:
        """Rows whose label `key` is one of `values`."""
        m = np.zeros(self.n, dtype=bool)
        for v in values:
            m |= self.equals(key, str(v))
        return m

    def compare(self, key: str, bound: Any, greater: bool) -> np.ndarray:
        """Gt / Lt: the label parses as an integer strictly above / below `bound`."""
        try:
            b = int(bound)
        except (TypeError, ValueError):
            return np.zeros(self.n, dtype=bool)
        out = np.zeros(self.n, dtype=bool)
        for i, v in enumerate(self.values(key)):
            if v is None:
                continue
            try:
                x = int(v)
            except ValueError:
                continue
            out[i] = x > b if greater else x < b
        return out

    def domain(self, key: str, rows: list[int]) -> np.ndarray:
        """Rows sharing label `key`'s value with any of `rows` (rows without the label: none)."""
        vals = self.values(key)
        wanted = {vals[r] for r in rows if vals[r] is not None}
        if not wanted:
            return np.zeros(self.n, dtype=bool)
        return np.isin(vals, list(wanted)) & self.present(key)

    # -- selectors ---------------------------------------------------------------------------
    def requirement(self, expr: dict, fields: bool = False) -> np.ndarray:
        """One matchExpressions (or matchFields on metadata.name) requirement."""
        op = expr.get("operator", "")
        values = [str(v) for v in expr.get("values") or []]
        if fields:
            # Kubernetes only supports metadata.name with In / NotIn here.
            if expr.get("key") != "metadata.name" or op not in ("In", "NotIn"):
                return np.zeros(self.n, dtype=bool)
            hit = np.isin(self.names, values)
            return hit if op == "In" else ~hit
        key = expr.get("key", "")
        if op == "In":
            return self.label_in(key, values)
        if op == "NotIn":
            return ~self.label_in(key, values)
        if op == "Exists":
            return self.present(key).copy()
        if op == "DoesNotExist":
            return ~self.present(key)
        if op in ("Gt", "Lt") and len(values) == 1:
            return self.compare(key, values[0], op == "Gt")
        return np.zeros(self.n, dtype=bool)

    def term(self, term: dict) -> np.ndarray:
        """A node selector term: all its requirements hold; an empty term matches nothing."""
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            return np.zeros(self.n, dtype=bool)
        m = np.ones(self.n, dtype=bool)
        for e in exprs:
            m &= self.requirement(e)
        for e in fields:
            m &= self.requirement(e, fields=True)
        return m

    def selector_and_affinity(self, task: TaskInfo) -> np.ndarray:
        """Rows matching the node selector and the required node affinity."""
        m = np.ones(self.n, dtype=bool)
        for k, v in task.node_selector.items():
            m &= self.equals(k, str(v))
        required = ((task.affinity or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution")
        if required:
            any_term = np.zeros(self.n, dtype=bool)
            for t in required.get("nodeSelectorTerms") or []:
                any_term |= self.term(t)
            m &= any_term
        return m

    def taint_failures(self, tolerations: list[dict]) -> Masks:
        """(reason, rows) grouped by each row's first untolerated NoSchedule/NoExecute taint."""
        groups: dict[str, np.ndarray] = {}
        for i, taints in enumerate(self.taints):
            for taint in taints:
                if taint.get("effect") not in FILTERED_EFFECTS:
                    continue
                if not any(tolerates(t, taint) for t in tolerations):
                    reason = taint_reason(taint)
                    if reason not in groups:
                        groups[reason] = np.zeros(self.n, dtype=bool)
                    groups[reason][i] = True
                    break
        return list(groups.items())


@register_plugin("predicates")
class PredicatesPlugin(Plugin):
    """Vectorised node filters with a per-session cache of the static part."""

    def __init__(self, arguments: dict | None = None) -> None:
        super().__init__(arguments)
        a = self.arguments
        self.affinity_on = arg_bool(a, "predicate.NodeAffinityEnable", True)
        self.taints_on = arg_bool(a, "predicate.TaintTolerationEnable", True)
        self.pod_affinity_on = arg_bool(a, "predicate.PodAffinityEnable", True)
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

    def pod_affinity_failures(self, task: TaskInfo, table: NodeTable, static: NodeStatic) -> Masks:
        """kube's InterPodAffinity filter: existing anti-affinity, then the task's own terms."""
        out: Masks = []
        bad = np.zeros(len(table), dtype=bool)
        for holder in list(self.anti_holders.values()):
            row = table.index.get(holder.node_name) if holder.node_name else None
            if row is None or holder.uid not in table.nodes[row].tasks:
                continue  # moved off its node (discarded) since it was recorded
            for term in pod_terms(holder, "podAntiAffinity"):
                if term_matches(term, holder, task):
                    bad |= static.domain(term.get("topologyKey", ""), [row])
        if bad.any():
            out.append((EXISTING_ANTI_AFFINITY, bad))
        affinity, anti = pod_terms(task, "podAffinity"), pod_terms(task, "podAntiAffinity")
        if not affinity and not anti:
            return out
        # The task itself is not excluded: actions ask with one representative of a class of
        # identical tasks, which may already sit on a node for its siblings.
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
                    # First pod of a self-affine group: any node with the topology key will do.
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

    def on_session_open(self, ssn: Session) -> None:
        """Build the static node view and register the predicate."""
        self.static = NodeStatic(ssn.node_table)
        self._cache.clear()
        self._taint_cache.clear()
        self.anti_holders = {t.uid: t for n in ssn.node_table.nodes for t in n.tasks.values()
                             if pod_terms(t, "podAntiAffinity")}

        def on_allocate(ev: Event) -> None:
            if pod_terms(ev.task, "podAntiAffinity"):
                self.anti_holders[ev.task.uid] = ev.task

        ssn.add_event_handler(EventHandler(allocate_func=on_allocate))

        def predicate(task: TaskInfo, table: NodeTable) -> Masks:
            static = self.static
            if static is None or static.n != len(table):
                static = self.static = NodeStatic(table)
            out = list(self.static_failures(task, static))
            limited = table.max_pods > 0
            too_many = limited & (table.pod_count >= table.max_pods)
            if too_many.any():
                out.append((TOO_MANY_PODS, too_many))
            if self.pod_affinity_on:
                out.extend(self.pod_affinity_failures(task, table, static))
            if self.proportional:
                out.extend(self.proportional_failures(task, table))
            return out

        # Not static: the pod count and idle resources change within the session.
        ssn.add_predicate_fn(self.name, predicate, static=False)

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session caches."""
        self.static = None
        self._cache.clear()
        self._taint_cache.clear()
        self.anti_holders.clear()

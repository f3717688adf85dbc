"""Node facts and Kubernetes selector helpers shared by the predicates and nodeorder plugins.

`NodeStatic` holds the nodes' static facts (names, labels, taints) as lazily built boolean
columns over NodeTable rows; the functions implement Kubernetes' toleration, label selector
and pod (anti-)affinity term matching.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.model import TaskInfo

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")

Masks = list[tuple[str, np.ndarray]]


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

"""PodIndex: the session's pods by label class, and per selector term its matches per topology domain.

Inter-pod rules (pod affinity and anti-affinity, topology spread) ask, for a term (namespaces
and a label selector) and a topology key, how many pods match in each domain. Asking it by
walking every pod of every node for every term of every task costs terms x pods x tasks; here
it is kept instead:
- pods are grouped into classes of equal (namespace, labels): a term is matched against a class
  once, through postings by namespace, label key and label value that leave only the classes a
  selector can select (the final check is `selector_matches` itself);
- per term, its matching pods per row (sparse) and, per topology key asked, per domain (a count
  array over the key's domain ids), pods leaving (Releasing) kept apart;
- the allocate / deallocate events (`handler()`) move one pod in every structure it counts in,
  so a term's counts are current after any placement, eviction or undo of the session.
Built on first use from the pods on the nodes, so a session without inter-pod terms pays nothing;
one per session (`session_index`), shared by the predicates and nodeorder plugins.
`work` counts the deterministic units spent (classes checked, pods counted, domain cells
touched): tests bound it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.framework.interface import Event, EventHandler
from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.node_static import NodeStatic, selector_matches

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

RELEASING = TaskStatus.RELEASING


def session_index(ssn: Session) -> PodIndex:
    """The session's one PodIndex (shared by the plugins that read inter-pod terms, so the pods
    are indexed once), its event handler registered on first request."""
    index = ssn.__dict__.get("_pod_index")
    if index is None:
        index = ssn.__dict__["_pod_index"] = PodIndex(ssn.node_table)
        ssn.add_event_handler(index.handler())
    return index


# A task's terms are shared decoded spec objects that outlive the session (a kept snapshot keeps
# them across cycles): each selector's text is kept per object, as model._canon keeps specs', so a
# gang's 100 terms are not encoded again at every cycle. Each entry holds its selector (its id
# cannot be reused meanwhile); cleared when it grows past the bound.
_KEY_MEMO_MAX = 65_536
_key_memo: dict[int, tuple[dict, str]] = {}


def selector_key(selector: dict | None) -> str:
    """Canonical text of a label selector (equal selectors, whatever their key order)."""
    if selector is None:
        return "null"
    hit = _key_memo.get(id(selector))
    if hit is not None and hit[0] is selector:
        return hit[1]
    try:
        text = json.dumps(selector, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(selector)
    if len(_key_memo) >= _KEY_MEMO_MAX:
        _key_memo.clear()
    _key_memo[id(selector)] = (selector, text)
    return text


class PodClass:
    """Pods with the same namespace and labels: per row, how many are live and how many leaving."""

    __slots__ = ("id", "namespace", "labels", "live", "leaving", "terms")

    def __init__(self, cid: int, namespace: str, labels: dict[str, str]) -> None:
        self.id = cid
        self.namespace = namespace
        self.labels = labels
        self.live: dict[int, int] = {}
        self.leaving: dict[int, int] = {}
        self.terms: list[Term] = []  # tracked terms selecting this class


class Weighted:
    """Signed weights x matching live pods, summed per topology domain over a set of terms (a
    task's preferred terms): per key, one array over the key's domains, kept by the events."""

    __slots__ = ("sums",)

    def __init__(self) -> None:
        self.sums: dict[str, np.ndarray] = {}


class Term:
    """One selector term's matches: per row (sparse) and per domain of each key asked."""

    __slots__ = ("namespaces", "selector", "classes", "live", "leaving", "domains", "total", "watchers")

    def __init__(self, namespaces: tuple[str, ...], selector: dict | None) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.classes: set[int] = set()
        self.live: dict[int, int] = {}
        self.leaving: dict[int, int] = {}
        # topology key -> (live per domain, leaving per domain); the last cell counts the pods on
        # rows without the key (never a domain, but part of "any match anywhere").
        self.domains: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.total = 0  # matching pods anywhere, leaving ones included
        self.watchers: list[tuple[Weighted, str, int]] = []  # sums this term adds to (key, weight)

    def matches(self, cls: PodClass) -> bool:
        """The term selects the class's pods."""
        return cls.namespace in self.namespaces and selector_matches(self.selector, cls.labels)


class PodIndex:
    """Pods on the nodes by class, with event-maintained match counts per term and domain."""

    def __init__(self, table: NodeTable, static: NodeStatic | None = None) -> None:
        self.table = table  # the session's (full) table
        self._static = static
        self.n = len(table)
        self.work = 0
        self._built = False
        self._classes: dict[tuple, PodClass] = {}
        self._by_id: list[PodClass] = []
        self._by_ns: dict[str, set[int]] = {}
        self._by_key: dict[str, set[int]] = {}
        self._by_label: dict[tuple[str, str], set[int]] = {}
        self._where: dict[str, tuple[int, PodClass, bool]] = {}  # task uid -> (row, class, leaving)
        self._terms: dict[tuple, Term] = {}
        self._ids: dict[str, tuple[np.ndarray, int]] = {}
        # Callers' per task class compilations (e.g. a task's terms resolved to Term objects).
        self.memo: dict[tuple, Any] = {}

    # -- events ------------------------------------------------------------------------------
    def handler(self) -> EventHandler:
        """The session event handler keeping the index current (a no-op until first use)."""
        return EventHandler(allocate_func=self._on_allocate, deallocate_func=self._on_deallocate)

    def _on_allocate(self, ev: Event) -> None:
        if self._built:
            self._move(ev.task)

    def _on_deallocate(self, ev: Event) -> None:
        if self._built:
            self._move(ev.task)

    def _move(self, task: TaskInfo) -> None:
        """Re-file the task where it now is: on its node (live or leaving) or nowhere."""
        old = self._where.pop(task.uid, None)
        if old is not None:
            self._count(old[1], old[0], old[2], -1)
        row = self.table.index.get(task.node_name) if task.node_name is not None else None
        if row is not None and task.uid in self.table.nodes[row].tasks:
            self._add(task, row)

    def _add(self, task: TaskInfo, row: int) -> None:
        cls = self._class_of(task)
        leaving = task.status is RELEASING
        self._where[task.uid] = (row, cls, leaving)
        self._count(cls, row, leaving, 1)

    def _count(self, cls: PodClass, row: int, leaving: bool, delta: int) -> None:
        rows = cls.leaving if leaving else cls.live
        _bump(rows, row, delta)
        for term in cls.terms:
            _bump(term.leaving if leaving else term.live, row, delta)
            term.total += delta
            for key, arrays in term.domains.items():
                arrays[1 if leaving else 0][self._domain_ids(key)[0][row]] += delta
            if not leaving:
                for weighted, key, signed in term.watchers:
                    weighted.sums[key][self._domain_ids(key)[0][row]] += signed * delta
                self.work += len(term.watchers)
        self.work += 1 + len(cls.terms)

    # -- build -------------------------------------------------------------------------------
    def _build(self) -> None:
        # One pass over the pods (no term is tracked yet, so only the classes count): the
        # inlined form of _add, as this pass is the index's whole cost in most sessions.
        self._built = True
        classes, where = self._classes, self._where
        pods = 0
        for row, node in enumerate(self.table.nodes):
            for task in node.tasks.values():
                labels = task.labels
                cls = classes.get((task.namespace, tuple(sorted(labels.items())) if labels else ()))
                if cls is None:
                    cls = self._class_of(task)
                leaving = task.status is RELEASING
                rows = cls.leaving if leaving else cls.live
                rows[row] = rows.get(row, 0) + 1
                where[task.uid] = (row, cls, leaving)
                pods += 1
        self.work += pods

    def _class_of(self, task: TaskInfo) -> PodClass:
        labels = task.labels
        key = (task.namespace, tuple(sorted(labels.items())) if labels else ())
        cls = self._classes.get(key)
        if cls is None:
            cls = self._classes[key] = PodClass(len(self._by_id), task.namespace, labels)
            self._by_id.append(cls)
            self._by_ns.setdefault(task.namespace, set()).add(cls.id)
            for k, v in labels.items():
                self._by_key.setdefault(k, set()).add(cls.id)
                self._by_label.setdefault((k, v), set()).add(cls.id)
            for term in self._terms.values():
                if term.matches(cls):
                    term.classes.add(cls.id)
                    cls.terms.append(term)
            self.work += 1 + len(self._terms)
        return cls

    # -- terms -------------------------------------------------------------------------------
    def term(self, namespaces: list[str] | tuple[str, ...], selector: dict | None) -> Term:
        """The tracked term for these namespaces and selector (matched against every class once)."""
        if not self._built:
            self._build()
        ns = tuple(sorted({str(x) for x in namespaces}))
        key = (ns, selector_key(selector))
        term = self._terms.get(key)
        if term is not None:
            return term
        term = self._terms[key] = Term(ns, selector)
        for cid in sorted(self._candidates(ns, selector)):
            cls = self._by_id[cid]
            self.work += 1
            if term.matches(cls):
                term.classes.add(cid)
                cls.terms.append(term)
                for row, c in cls.live.items():
                    _bump(term.live, row, c)
                    term.total += c
                for row, c in cls.leaving.items():
                    _bump(term.leaving, row, c)
                    term.total += c
                self.work += len(cls.live) + len(cls.leaving)
        return term

    def _candidates(self, namespaces: tuple[str, ...], selector: dict | None) -> set[int]:
        """Classes the selector may select (a superset: `Term.matches` decides)."""
        if selector is None:
            return set()
        found: set[int] = set()
        for ns in namespaces:
            found |= self._by_ns.get(ns, set())
        for k, v in (selector.get("matchLabels") or {}).items():
            found &= self._by_label.get((k, str(v)), set())
        for e in selector.get("matchExpressions") or []:
            op, k = e.get("operator", ""), e.get("key", "")
            if op == "In":
                hit: set[int] = set()
                for v in e.get("values") or []:
                    hit |= self._by_label.get((k, str(v)), set())
                found &= hit
            elif op == "Exists":
                found &= self._by_key.get(k, set())
        return found

    # -- counts ------------------------------------------------------------------------------
    def _domain_ids(self, key: str) -> tuple[np.ndarray, int]:
        """(domain id per row, domain count) of a topology key; rows without it get the count."""
        hit = self._ids.get(key)
        if hit is None:
            if self._static is None:
                self._static = NodeStatic(self.table)
            values = self._static.values(key)
            names: dict[Any, int] = {}
            ids = np.empty(self.n, dtype=np.intp)
            for r, v in enumerate(values.tolist()):
                ids[r] = names.setdefault(v, len(names)) if v is not None else -1
            ndom = len(names)
            ids[ids < 0] = ndom
            hit = self._ids[key] = (ids, ndom)
            self.work += self.n
        return hit

    def domain_ids(self, key: str) -> tuple[np.ndarray, int]:
        """Public form of the key's domain ids (row -> id; `ndom` for rows without the key)."""
        return self._domain_ids(key)

    def domain_counts(self, term: Term, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(live, leaving) matching pods per domain of `key` (length ndom + 1; the last cell:
        rows without the key). Shared arrays, kept current by the events: read, never write."""
        arrays = term.domains.get(key)
        if arrays is None:
            ids, ndom = self._domain_ids(key)
            live = np.zeros(ndom + 1, dtype=np.int64)
            leaving = np.zeros(ndom + 1, dtype=np.int64)
            for row, c in term.live.items():
                live[ids[row]] += c
            for row, c in term.leaving.items():
                leaving[ids[row]] += c
            arrays = term.domains[key] = (live, leaving)
            self.work += ndom + len(term.live) + len(term.leaving)
        self.work += len(arrays[0])
        return arrays

    def weighted(self, memo_key: tuple, terms: list[tuple[list[str], dict | None, str, int]]) -> Weighted:
        """The `Weighted` sums of (namespaces, selector, topology key, signed weight) terms, made
        once per `memo_key` (a task class) and kept current by the events from then on."""
        hit = self.memo.get(memo_key)
        if hit is None:
            hit = self.memo[memo_key] = Weighted()
            for namespaces, selector, key, signed in terms:
                term = self.term(namespaces, selector)
                live, _ = self.domain_counts(term, key)
                acc = hit.sums.get(key)
                hit.sums[key] = signed * live if acc is None else acc + signed * live
                term.watchers.append((hit, key, signed))
        return hit

    def per_row(self, per_domain: np.ndarray, key: str) -> np.ndarray:
        """A per-domain array read at every row (rows without the key: 0)."""
        ids, ndom = self._domain_ids(key)
        ext = per_domain.copy()
        ext[ndom] = 0
        self.work += self.n
        return ext[ids]

    def live_rows(self, term: Term) -> tuple[np.ndarray, np.ndarray]:
        """(rows, counts) of the term's live matching pods, rows ascending."""
        rows = np.fromiter(sorted(term.live), dtype=np.intp, count=len(term.live))
        counts = np.fromiter((term.live[r] for r in rows.tolist()), dtype=np.int64, count=len(rows))
        self.work += len(rows)
        return rows, counts


def _bump(rows: dict[int, int], row: int, delta: int) -> None:
    c = rows.get(row, 0) + delta
    if c:
        rows[row] = c
    else:
        rows.pop(row, None)

"""capacity's queue hierarchy kept across sessions on one snapshot (issue 27).

`build_hierarchy` makes every attr, ancestor chain, inherited capability, real capability,
clamped deserved and explanation at each session open, though between two cycles the queue
definitions rarely change and most queues' job figures do not move. `KeptTree` is capacity's
part of the snapshot's `KeptState` (framework.kept, key "capacity.tree") and keeps the tree in
its two parts (tree.py):

- the structure (`build_structure`), rebuilt only when a queue definition (parent, weight,
  deserved, guarantee, capability) or the cluster total differs from the last open, compared by
  value;
- the job figures: the per-queue sums come from the kept `JobSums` (plugins.util.job_figures),
  whose sums for a queue stay the same object while none of its jobs moved. Only the leaves whose
  sums object changed (or that started or stopped counting) are refilled, and only the ancestors
  above them, or whose list of counting leaves changed, re-summed: deepest first, each from its
  children's figures, which is exact while every figure is a whole number below 2**53 (stored
  amounts are milli-units and bytes); otherwise each from its leaves in the order a fresh build
  adds them. Either way every figure equals a fresh build's exactly.

The kept attrs are a template: each session gets clones (`QueueAttr.clone`: its own allocated
and inqueue, the figures a session moves; the rest shared and never changed in place, since
the template replaces a Resource rather than change it). The move counters and memos of
verdicts.py live here too: `Moves.settle` gives every queue refilled at this open, or moved by
the last session, a new counter, so an answer memoised in an earlier session is given back only
for queues whose figures are the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.plugins.capacity.tree import CapacityTree, build_structure, held
from scheduler_core.plugins.capacity.verdicts import ChainMemos
from scheduler_core.plugins.util.job_figures import Parts, job_sums, whole
from scheduler_core.plugins.util.queue_attr import QueueAttr, update_share
from scheduler_core.resources import Resource

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scheduler_core.framework.session import Session
    from scheduler_core.model import QueueInfo


def _res(r: Resource | None) -> tuple[Any, ...] | None:
    """A resource's value, comparable (scalars in their order: another order only rebuilds)."""
    if r is None:
        return None
    return (r.milli_cpu, r.memory, tuple(r.scalars.items()) if r.scalars else (), r.max_task_num)


def structure_key(queues: Mapping[str, QueueInfo], total: Resource) -> tuple[Any, ...]:
    """Everything the structure is built from: each queue's definition and the cluster total."""
    return (_res(total), {name: (q.parent, q.weight, _res(q.deserved), _res(q.guarantee), _res(q.capability))
                          for name, q in queues.items()})


def _empty() -> Parts:
    return (Resource.empty(), Resource.empty(), Resource.empty(), Resource.empty())


def _sum(parts: list[Parts]) -> Parts:
    """Resource.empty() plus each parts in order: what a fresh build's add_contribution makes."""
    acc = _empty()
    for p in parts:
        for a, r in zip(acc, p, strict=True):
            a.add(r)
    return acc


def _figures(attr: QueueAttr) -> Parts:
    return (attr.allocated, attr.request, attr.inqueue, attr.elastic)


def _set(attr: QueueAttr, parts: Parts) -> None:
    """New figures for a template attr (new objects: sessions share the old ones)."""
    attr.allocated, attr.request, attr.inqueue, attr.elastic = parts
    update_share(attr, best_effort_is_one=True)


class KeptTree:
    """The hierarchy as of the last open (a template), what it was built from, and the memos."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.structure: CapacityTree | None = None
        self.sums: dict[str, Parts] = {}  # counting leaf -> the JobSums object its figures came from
        self.leaves: dict[str, list[str]] = {}  # ancestor -> its counting leaves, in sums order
        self.inexact: set[str] = set()  # counting leaves with a figure that is not a whole number
        self.memos = ChainMemos()
        self.rebuilt = 0  # structure builds (tests, benchmarks)
        self.refilled: set[str] = set()  # queues whose figures the last open recomputed

    def open(self, ssn: Session) -> CapacityTree:
        """The session's tree: the kept one brought up to date, as clones the session may move."""
        key = structure_key(ssn.queues, ssn.total_resource)
        sums = job_sums(ssn, "capacity")
        if self.structure is None or key != self.key:
            self.structure = build_structure(ssn.queues, ssn.total_resource)
            self.key, self.sums, self.leaves, self.inexact = key, {}, {}, set()
            self.rebuilt += 1
            self.refilled = set(self.structure.attrs)
            self._fill(held(self.structure, sums), every=True)
        else:
            self.refilled = set()
            self._fill(held(self.structure, sums), every=False)
        self.memos.moves.settle(self.refilled)
        tree = self.structure
        return CapacityTree(attrs={n: a.clone() for n, a in tree.attrs.items()}, hierarchy=True,
                            broken=tree.broken, warnings=tree.warnings, explanations=tree.explanations)

    def _fill(self, counting: dict[str, Parts], every: bool) -> None:
        """Bring the template's job figures to `counting` (leaf -> its sums, in sums order)."""
        attrs, old = self.structure.attrs, self.sums  # type: ignore[union-attr]
        changed = [name for name, parts in counting.items() if old.get(name) is not parts]
        gone = [name for name in old if name not in counting]
        if not every and not changed and not gone and list(counting) == list(old):
            return  # nothing moved: the template stands as it is
        inexact = self.inexact
        for name in gone:
            _set(attrs[name], _empty())
            inexact.discard(name)
        for name in changed:
            _set(attrs[name], _sum([counting[name]]))
            if whole(counting[name]):
                inexact.discard(name)
            else:
                inexact.add(name)
        leaves: dict[str, list[str]] = {}
        for name in counting:
            for anc in attrs[name].ancestors:
                got = leaves.get(anc)
                if got is None:
                    got = leaves[anc] = []
                got.append(name)
        if every:
            stale = set(attrs) - counting.keys()
        else:
            stale = {anc for name in (*changed, *gone) for anc in attrs[name].ancestors}
            stale.update(anc for anc, names in leaves.items() if self.leaves.get(anc) != names)
            stale.update(anc for anc in self.leaves if anc not in leaves)
        if every or inexact or not self._by_children(stale):
            for anc in stale:
                _set(attrs[anc], _sum([_figures(attrs[n]) for n in leaves.get(anc, ())]))
        self.sums, self.leaves = dict(counting), leaves
        self.refilled.update(changed, gone, stale)

    def _by_children(self, stale: set[str]) -> bool:
        """Re-sum the stale ancestors from their children's figures, deepest first (each child is
        current by then); False when a sum is not exact (the caller re-sums from the leaves)."""
        attrs = self.structure.attrs  # type: ignore[union-attr]
        for anc in sorted(stale, key=lambda n: -len(attrs[n].ancestors)):
            attr = attrs[anc]
            _set(attr, _sum([_figures(attrs[c]) for c in attr.children]))
            if not attr.ancestors and not whole(_figures(attr)):
                return False  # the root's sums bound every other: past 2**53 only here first
        return True

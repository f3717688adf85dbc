"""Queue resource limits at every level of the tree, checked on create, update and move.

Volcano's queue admission webhook (`validateResourceOfQueue`) refuses a queue whose deserved or
guarantee is above its capability, or whose guarantee is above its deserved. The capacity
plugin's hierarchy check (`checkHierarchicalQueue`) only warns when children ask more than their
parent has; like Kueue cohorts and YuniKorn's queue hierarchy we refuse that at the door, since
either leaves the tree unable to give what it promises. The rules, per dimension:

- own: deserved and guarantee within the capability, guarantee within the deserved;
- ancestors: a queue's guarantee, deserved and capability within every ancestor's capability
  (a child's capability is never above its parent's);
- siblings: the children's guarantees add up to at most the parent's guarantee and capability,
  and the children's deserved to at most the parent's deserved and capability (a parent that
  sets neither in a dimension bounds nothing there).

The top level is not bounded: its parent is the cluster, whose size changes as nodes come and go,
so no write is refused against node totals. Top-level guarantees above the cluster leave every
top-level queue its guarantee only (nothing to borrow; not every guarantee can be met at once);
the queue preview warns about it (schedweb.scheduling.queue_preview).

Only dimensions present on both sides are compared: a dimension missing from a capability is
unlimited, and one missing from a guarantee or deserved promises nothing (stored-map semantics
of the README). Amounts are stored units (milli-cpu, bytes, milli-units), compared with
`scheduler_core.resources.MIN_RESOURCE` tolerance; `pods` is never compared.

Data stored before a rule existed may break it. A write is refused only for a breach it creates
or makes larger (the excess over the bound grows), so such a queue still loads, saves unrelated
fields and can be edited toward validity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedweb.core.models import Queue
from schedweb.core.validation import fail

Resources = dict[str, float] | None
NEW = 0  # the id a queue being created has in the rows checked (ids start at 1)
OWN_PAIRS = (("deserved", "capability"), ("guarantee", "capability"), ("guarantee", "deserved"))
FIGURES = ("guarantee", "deserved", "capability")
SUMMED = ("guarantee", "deserved")


def dims_of(low: Resources, high: Resources) -> list[str]:
    """Dimensions set on both sides (pods left out): cpu, memory, then sorted."""
    if not low or not high:
        return []
    return sorted((set(low) & set(high)) - {"pods"}, key=lambda d: (d not in ("cpu", "memory"), d))


def amount(dim: str, stored: float) -> str:
    """A stored amount in input units: cores, bytes (as Gi/Mi when whole), units."""
    if dim == "memory":
        for suffix, factor in (("Gi", 2**30), ("Mi", 2**20)):
            if stored and float(stored) % factor == 0:
                return f"{int(stored) // factor}{suffix}"
        return f"{float(stored):g}"
    value = float(stored) / 1000
    return f"{int(value)}" if value.is_integer() else f"{value:g}"


def sum_maps(maps: list[Resources]) -> dict[str, float]:
    """Per-dimension sum of resource maps (None counts as nothing)."""
    total: dict[str, float] = {}
    for res in maps:
        for dim, value in (res or {}).items():
            total[dim] = total.get(dim, 0.0) + float(value)
    return total


@dataclass(frozen=True)
class Breach:
    """One rule broken in one dimension: `key` identifies it across two versions of the tree,
    `excess` is by how much (stored units)."""

    key: tuple
    excess: float
    low: float
    high: float


class Tree:
    """The queue rows ({id: {id, name, parent_id, capability, deserved, guarantee}}) with
    their children, for the checks."""

    def __init__(self, rows: dict[int, dict[str, Any]]) -> None:
        self.rows = rows
        self.children: dict[int | None, list[int]] = {}
        for row in rows.values():
            self.children.setdefault(row["parent_id"], []).append(row["id"])

    def ancestors(self, qid: int) -> list[int]:
        """Parent first, up to the top level (a cycle, which should never exist, ends it)."""
        out: list[int] = []
        node = self.rows.get(self.rows[qid]["parent_id"]) if qid in self.rows else None
        while node is not None and node["id"] not in out and node["id"] != qid:
            out.append(node["id"])
            node = self.rows.get(node["parent_id"])
        return out

    def descendants(self, qid: int) -> list[int]:
        """Every queue under `qid`, depth first (no recursion: deep trees must not overflow)."""
        out, stack, seen = [], list(self.children.get(qid, [])), {qid}
        while stack:
            kid = stack.pop()
            if kid in seen:
                continue
            seen.add(kid)
            out.append(kid)
            stack.extend(self.children.get(kid, []))
        return out

    def breaches(self, qid: int, parents: set[int]) -> dict[tuple, Breach]:
        """Every breach a change of `qid` can touch: its own limits, its pairs with its ancestors
        and descendants (and theirs with its ancestors, for a move), the sums under `parents`."""
        out: dict[tuple, Breach] = {}

        def check(key: tuple, low: Resources, high: Resources) -> None:
            for dim in dims_of(low, high):
                lo, hi = float(low[dim]), float(high[dim])  # type: ignore[index]
                if lo > hi:
                    out[(*key, dim)] = Breach((*key, dim), lo - hi, lo, hi)

        if qid in self.rows:
            row = self.rows[qid]
            for low, high in OWN_PAIRS:
                check(("own", qid, low, high), row[low], row[high])
            above = self.ancestors(qid)
            for aid in above:
                for figure in FIGURES:
                    check(("anc", qid, figure, aid), row[figure], self.rows[aid]["capability"])
            for did in self.descendants(qid):
                for aid in [qid, *above]:
                    for figure in FIGURES:
                        check(("anc", did, figure, aid), self.rows[did][figure], self.rows[aid]["capability"])
        for pid in sorted(p for p in parents if p in self.rows):
            kids = [self.rows[k] for k in self.children.get(pid, [])]
            for figure in SUMMED:
                total = sum_maps([k[figure] for k in kids])
                for bound in (figure, "capability"):
                    check(("sum", pid, figure, bound), total, self.rows[pid][bound])
        return out


def _rank(key: tuple, qid: int) -> tuple:
    """The order refusals are reported in: own limits, then against ancestors, the siblings'
    sum, its own children's sum, its descendants; figures and dimensions in a fixed order."""
    kind = key[0]
    if kind == "own":
        return (0, OWN_PAIRS.index((key[2], key[3])), key[-1])
    if kind == "anc":
        return (1 if key[1] == qid else 4, FIGURES.index(key[2]), key[3], key[1], key[-1])
    return (3 if key[1] == qid else 2, SUMMED.index(key[2]), key[3] != key[2], key[-1])


def _describe(tree: Tree, b: Breach, qid: int, moved: bool) -> tuple[str, str]:
    """(field, message) of a breach, as the queue being changed sees it."""
    key, rows = b.key, tree.rows
    dim = key[-1]
    low, high = f"{dim} {amount(dim, b.low)}", f"{dim} {amount(dim, b.high)}"
    if key[0] == "own":
        return key[2], f"{key[2].capitalize()} {low} is above the {key[3]} {high}."
    if key[0] == "anc":
        _, did, figure, aid, _ = key
        if did == qid:
            return figure, (f"{figure.capitalize()} {low} is above the capability of ancestor queue "
                            f"{rows[aid]['name']!r}: {high}.")
        return ("parent" if moved and aid != qid else "capability"), (
            f"The {figure} of descendant queue {rows[did]['name']!r}: {low} is above the capability "
            f"of {rows[aid]['name']!r}: {high}.")
    _, pid, figure, bound, _ = key
    what = "guarantees" if figure == "guarantee" else "deserved"
    if pid == qid:
        return bound, (f"The {what} of the child queues of {rows[pid]['name']!r} add up to {low}, above "
                       f"its {bound} {high}.")
    return figure, (f"The {what} of the child queues of {rows[pid]['name']!r} would add up to {low}, "
                    f"above its {bound} {high}.")


def load_tree() -> Tree:
    """The stored queue rows (the limits' columns only)."""
    rows = Queue.objects.values("id", "name", "parent_id", "capability", "deserved", "guarantee")
    return Tree({row["id"]: row for row in rows})


def check_queue_limits(*, queue: Queue | None, name: str, parent: Queue | None, capability: Resources,
                       deserved: Resources, guarantee: Resources, parent_changed: bool = True) -> None:
    """Refuse (ValidationError naming the field) limits that contradict the queue itself, its
    ancestors, its siblings or its descendants (`queue` None: a create); only breaches this
    change creates or enlarges count (see the module docstring)."""
    from scheduler_core.resources import MIN_RESOURCE

    before = load_tree()
    qid = queue.pk if queue is not None and queue.pk is not None else NEW
    old_parent = before.rows[qid]["parent_id"] if qid in before.rows else None
    rows = dict(before.rows)
    rows[qid] = {"id": qid, "name": name, "parent_id": parent.pk if parent is not None else None,
                 "capability": capability, "deserved": deserved, "guarantee": guarantee}
    after = Tree(rows)
    parents = {p for p in (old_parent, rows[qid]["parent_id"], qid) if p is not None}
    was = before.breaches(qid, parents)
    grown = [b for key, b in after.breaches(qid, parents).items()
             if b.excess > (was[key].excess if key in was else 0.0) + MIN_RESOURCE]
    if grown:
        first = min(grown, key=lambda b: _rank(b.key, qid))
        moved = parent_changed and old_parent != rows[qid]["parent_id"]
        field, message = _describe(after, first, qid, moved=moved)
        raise fail(field, message)

"""Queue resource limits at every level of the tree, checked on create and update.

Volcano's queue admission webhook (`validateResourceOfQueue`) refuses a queue whose deserved or
guarantee is above its capability, or whose guarantee is above its deserved. The capacity
plugin's hierarchy check (`checkHierarchicalQueue`, seed 002) warns when the children's
guarantees add up to more than their parent's; we refuse that at the door as well, and a guarantee
above any ancestor's capability, since either leaves the tree unable to give what it promises
(a guarantee above the capability made every leaf's deserved cpu 0).

Only dimensions present on both sides are compared: a dimension missing from a capability is
unlimited, and one missing from a guarantee or deserved promises nothing (stored-map semantics
of the README). Amounts are stored units (milli-cpu, bytes, milli-units), compared with
`scheduler_core.resources.MIN_RESOURCE` tolerance.
"""

from __future__ import annotations

from typing import Any

from schedweb.core.models import Queue
from schedweb.core.validation import fail

Resources = dict[str, float] | None


def _over(low: Resources, high: Resources, among: Resources | None = None) -> str | None:
    """The first dimension (cpu, memory, then sorted; only those of `among` when given) in which
    `low` exceeds `high`, if any."""
    from scheduler_core.resources import MIN_RESOURCE

    if not low or not high:
        return None
    dims = set(low) & set(high) & (set(among) if among is not None else set(low))
    for dim in sorted(dims, key=lambda d: (d not in ("cpu", "memory"), d)):
        if dim != "pods" and float(low[dim]) > float(high[dim]) + MIN_RESOURCE:
            return dim
    return None


def _amount(dim: str, stored: float) -> str:
    """A stored amount in input units: cores, bytes (as Gi/Mi when whole), units."""
    if dim == "memory":
        for suffix, factor in (("Gi", 2**30), ("Mi", 2**20)):
            if stored and float(stored) % factor == 0:
                return f"{int(stored) // factor}{suffix}"
        return f"{stored:g}"
    value = float(stored) / 1000
    return f"{int(value)}" if value.is_integer() else f"{value:g}"


def _above(what: str, low: dict, dim: str, other: str, high: dict) -> str:
    return (f"{what} {dim} {_amount(dim, low[dim])} is above {other} {dim} "
            f"{_amount(dim, high[dim])}.")


def _sum(maps: list[Resources]) -> dict[str, float]:
    total: dict[str, float] = {}
    for res in maps:
        for dim, amount in (res or {}).items():
            total[dim] = total.get(dim, 0.0) + float(amount)
    return total


def check_queue_limits(*, queue: Queue | None, name: str, parent: Queue | None, capability: Resources,
                       deserved: Resources, guarantee: Resources, parent_changed: bool = True) -> None:
    """Refuse (ValidationError naming the field) limits that contradict the queue itself, its
    ancestors, its siblings' guarantees or its descendants. `queue` is None on create."""
    for field, low, high, label in (("deserved", deserved, capability, "the capability"),
                                    ("guarantee", guarantee, capability, "the capability"),
                                    ("guarantee", guarantee, deserved, "the deserved")):
        dim = _over(low, high)
        if dim:
            raise fail(field, _above(field.capitalize(), low, dim, label, high))
    rows = {row["id"]: row for row in Queue.objects.values("id", "name", "parent_id", "capability",
                                                           "guarantee")}
    own_id = queue.pk if queue is not None else None
    # Ancestors (the new parent's chain): the guarantee fits each one's capability.
    for node in _chain(rows, parent):
        dim = _over(guarantee, node["capability"])
        if dim:
            raise fail("guarantee", _above("Guarantee", guarantee, dim,
                                           f"the capability of ancestor queue {node['name']!r}:",
                                           node["capability"]))
    # Siblings: the guarantees of the parent's children add up to at most its guarantee/capability.
    if parent is not None:
        siblings = [r["guarantee"] for r in rows.values()
                    if r["parent_id"] == parent.pk and r["id"] != own_id]
        total = _sum([*siblings, guarantee])
        prow = rows[parent.pk]
        for label, high in (("guarantee", prow["guarantee"]), ("capability", prow["capability"])):
            # Only this queue's own dimensions: a sum already over elsewhere is not its change.
            dim = _over(total, high, among=guarantee or {})
            if dim:
                raise fail("guarantee", f"The guarantees of the child queues of {parent.name!r} would add "
                                        f"up to {dim} {_amount(dim, total[dim])}, above its {label} "
                                        f"{dim} {_amount(dim, high[dim])}.")
    if queue is None:
        return
    children: dict[int | None, list[dict[str, Any]]] = {}
    for row in rows.values():
        children.setdefault(row["parent_id"], []).append(row)
    # Own children: their guarantees add up to at most this queue's guarantee and capability.
    total = _sum([r["guarantee"] for r in children.get(own_id, [])])
    for field, high in (("guarantee", guarantee), ("capability", capability)):
        dim = _over(total, high)
        if dim:
            raise fail(field, f"The guarantees of the child queues of {name!r} add up to {dim} "
                              f"{_amount(dim, total[dim])}, above its {field} {dim} "
                              f"{_amount(dim, high[dim])}.")
    # Descendants: each guarantee fits this capability (and, after a move, the new ancestors').
    limits = [("capability", name, capability)]
    if parent_changed:
        limits += [("parent", r["name"], r["capability"]) for r in _chain(rows, parent)]
    stack = list(children.get(own_id, []))
    while stack:
        row = stack.pop()
        for field, owner, cap in limits:
            dim = _over(row["guarantee"], cap)
            if dim:
                raise fail(field, _above(f"The guarantee of descendant queue {row['name']!r}:",
                                         row["guarantee"], dim, f"the capability of {owner!r}:", cap))
        stack.extend(children.get(row["id"], []))


def _chain(rows: dict[int, dict[str, Any]], parent: Queue | None) -> list[dict[str, Any]]:
    out, seen = [], set()
    node = rows.get(parent.pk) if parent is not None else None
    while node is not None and node["id"] not in seen:
        seen.add(node["id"])
        out.append(node)
        node = rows.get(node["parent_id"])
    return out

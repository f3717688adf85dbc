"""Who may change what a queue takes from its siblings (the parent governs its children's shares).

A queue's deserved, guarantee, weight, priority and reclaimable flag move its siblings: a larger
guarantee shrinks every sibling's real capability, a larger deserved or weight their share, a
higher priority serves it first, and an unreclaimable queue keeps what it borrows. So:

- staff and admins of the parent (directly or through an ancestor of it) change them freely,
  within the hierarchy limits (schedweb.core.queue_limits); for a top-level queue the parent is
  the implicit root, which only staff administer;
- an admin of the queue alone (a sub-queue admin) may lower any of them, and may raise the
  deserved or guarantee in a dimension only up to what the siblings leave unclaimed there: the
  parent's bound (for deserved: its deserved, else its capability; for guarantee: its guarantee,
  else its capability) minus the siblings' claims (each sibling's larger of deserved and
  guarantee, which is what the capacity plugin gives it at least). A dimension the parent does
  not bound (and every dimension at the top level) has nothing to measure a share against: a
  raise there needs the parent's admin. Weight and priority are relative, so any raise takes
  from every sibling: never raised by a sub-queue admin, nor is reclaimable switched off.

Refusals are field errors (400 from the API, form errors on the page) naming the figures.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.resources import MIN_RESOURCE
from schedweb.core.access import QueueAccess
from schedweb.core.queue_limits import Tree, amount, dims_of
from schedweb.core.validation import fail


def _claims(tree: Tree, parent_id: int | None, qid: int, dim: str) -> float:
    total = 0.0
    for sid in tree.children.get(parent_id, []):
        if sid != qid:
            row = tree.rows[sid]
            total += max(float((row[f] or {}).get(dim, 0)) for f in ("deserved", "guarantee"))
    return total


def _raised(before: dict | None, after: dict | None) -> list[str]:
    """Dimensions (not pods) whose amount grows; a missing one is 0."""
    old, new = before or {}, after or {}
    dims = sorted((set(new) - {"pods"}), key=lambda d: (d not in ("cpu", "memory"), d))
    return [d for d in dims if float(new[d]) > float(old.get(d, 0))]


def check_sibling_share(*, access: QueueAccess | None, tree: Tree, qid: int, before: dict[str, Any],
                        after: dict[str, Any]) -> None:
    """Refuse a sub-queue admin's change that takes from the siblings (see the module docstring).
    `before` / `after` are the queue's settings (weight, priority, reclaimable, deserved,
    guarantee); `tree` the stored rows; `access` None (a system write) is never refused."""
    parent_id = after["parent_id"]
    if access is None or access.can_admin(parent_id):
        return
    name = after["name"]
    parent = tree.rows[parent_id]["name"] if parent_id in tree.rows else "root"
    who = (f"only admins of {parent!r} (or staff) may" if parent_id in tree.rows
           else "only staff may, as for every top-level queue")
    for field in ("weight", "priority"):
        if after[field] > before[field]:
            raise fail(field, f"Raising the {field} of {name!r} ({before[field]} \u2192 {after[field]}) "
                              f"takes from its siblings under {parent!r}: {who}.")
    if before["reclaimable"] and not after["reclaimable"]:
        raise fail("reclaimable", f"Making {name!r} not reclaimable keeps what it borrows from its siblings "
                                  f"under {parent!r}: {who}.")
    for field in ("deserved", "guarantee"):
        for dim in _raised(before[field], after[field]):
            new = float(after[field][dim])
            prow = tree.rows.get(parent_id)
            bound_field = next((f for f in (field, "capability") if prow is not None
                                and dim in dims_of({dim: 0}, prow[f])), None)
            if bound_field is None:
                raise fail(field, f"Raising the {field} {dim} of {name!r} to {amount(dim, new)}: "
                                  f"{parent!r} does not bound {dim}, so there is no unclaimed share "
                                  f"to take; {who}.")
            bound = float(prow[bound_field][dim])  # type: ignore[index]
            claims = _claims(tree, parent_id, after["id"], dim)
            if new > bound - claims + MIN_RESOURCE:
                left = max(bound - claims, 0.0)
                raise fail(field, (
                    f"Raising the {field} {dim} of {name!r} to {amount(dim, new)} is above what its "
                    f"siblings leave unclaimed under {parent!r}: {dim} {amount(dim, left)} (its "
                    f"{bound_field} {amount(dim, bound)} minus the siblings' {amount(dim, claims)}); "
                    f"more needs admin rights on {parent!r}."))

"""capacity's queue order as a sort key over a given set of queues, when one exists.

`CapacityPlugin.queue_order` compares priority, then (with hierarchy) leaves before parents and
two leaves at the children of their common ancestor: the first place where their paths from the
root differ, by (share, queues with deserved first). Equal there means "no opinion" and the
session falls back to the two queues' creation time and name, so with such ties the order need
not even be transitive, and a heap's answer then depends on which pairs it happened to compare.
Without such ties the comparator is the lexicographic order of the paths, a sort key:
`static_key` returns it when, among the given queues, every tie is harmless: the queues below
two tied siblings (or two tied parent queues) tie all the way down, so the comparator falls back
for all of them and the key's tail (creation time, name) orders them alike; else None, and the
caller keeps the comparator. The key reads the shares once: it holds while no figure moves (enqueue, whose
admissions change inqueue only, and backfill, whose best-effort tasks request nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler_core.model import QueueInfo
from scheduler_core.plugins.util.queue_attr import QueueAttr
from scheduler_core.resources import MIN_RESOURCE


def _value(attr: QueueAttr) -> tuple[float, int]:
    # What the comparator reads of one queue: lower share first, then deserved before best-effort.
    return (attr.share, 0 if not attr.deserved.is_empty() else 1)


def _pinned(attr: QueueAttr) -> bool:
    # No dimension of deserved counts (update_share): best-effort, share 1 whatever is allocated.
    des = attr.deserved
    return (des.milli_cpu < MIN_RESOURCE and des.memory < MIN_RESOURCE
            and all(v < MIN_RESOURCE for v in des.scalars.values()))


def static_key(opts: dict[str, QueueAttr], hierarchy: bool, queues: list[QueueInfo],
               moving: bool = False) -> Callable[[QueueInfo], tuple[Any, ...]] | None:
    """A key whose order over `queues` equals `queue_order` (then the fallback), or None.

    `moving`: the key must also hold while allocations move the figures, a queue being re-keyed
    when it is pushed back after its job (allocate): flat queues are compared on their own
    figures, so a live key holds; with hierarchy a share read for one queue belongs to others
    too, so only shares that cannot move (every queue on the paths best-effort) qualify.
    """
    if any(q.name not in opts for q in queues):
        return None  # the comparator has no opinion on such a queue whatever the others
    keys: dict[str, tuple[Any, ...]] = {}
    if not hierarchy:
        # Flat: priority, then each queue's own (share, deserved first); a tie falls back to
        # creation time and name, as the key's tail does: a total order, whatever the ties.
        # Read at push time: the share of a queue pushed back is its new one.
        return lambda q: (-q.priority, *_value(opts[q.name]))
    # (priority, parent-or-leaf, path prefix) -> the values met right below that prefix.
    groups: dict[tuple[Any, ...], dict[str, tuple[float, int]]] = {}
    paths: dict[str, tuple[tuple[Any, ...], list[str]]] = {}
    for q in queues:
        attr = opts[q.name]
        # A parent queue is compared on its own attrs; a leaf along its path below the root.
        path = [q.name] if attr.children else [*attr.ancestors[1:], q.name]
        head = (q.priority, 1 if attr.children else 0)
        paths[q.name] = head, path
        for i, name in enumerate(path):
            if moving and not _pinned(opts[name]):
                return None
            groups.setdefault((*head, *path[:i]), {})[name] = _value(opts[name])
    distinct = {g: len(set(values.values())) for g, values in groups.items()}
    for name, (head, path) in paths.items():
        elements: list[tuple[Any, ...]] = []
        for i, member in enumerate(path):
            group = groups[(*head, *path[:i])]
            value = group[member]
            if distinct[(*head, *path[:i])] == len(group) or list(group.values()).count(value) == 1:
                elements.append((*value, member))
                continue
            # A tie: two queues below this level compare by the fallback, which the key's tail
            # gives only if every comparison further down ties as well.
            if any(distinct[(*head, *path[:j])] > 1 for j in range(i + 1, len(path))):
                return None
            elements.append(value)
            break
        keys[name] = (-head[0], head[1], *elements)
    return lambda q: keys[q.name]

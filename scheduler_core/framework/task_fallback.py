"""The task order when no plugin orders two tasks (Volcano's `CompareTask`).

Pod names of the form `<job>-<task>-<index>` compare by their numeric index first, so `w-9`
comes before `w-10`; when either name has no index (its last `-` part is not a decimal
integer) or both indexes are equal: earlier creation time, then uid.

That comparison is not a total order when tasks with and without an index mix (it is not
transitive then), so `sort_tasks` sorts by a key when every task has an index or none has,
and by the pairwise comparison otherwise (deterministic, as the input order is).
"""

from __future__ import annotations

import re
from functools import cmp_to_key, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.model import TaskInfo

# Go's strconv.Atoi: an optional sign and decimal digits, within int64.
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


@lru_cache(maxsize=1 << 16)  # sorts ask for the same names again and again
def name_index(name: str) -> int | None:
    """The numeric index ending a `-`-separated name, or None."""
    last = name.rsplit("-", 1)[-1]
    if not _INT.fullmatch(last):
        return None
    value = int(last)
    return value if -_INT64 <= value < _INT64 else None


def compare_task(lhs: TaskInfo, rhs: TaskInfo) -> int:
    """<0 when lhs goes first: index, then creation time, then uid."""
    li, ri = name_index(lhs.name), name_index(rhs.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    if lhs.created != rhs.created:
        return -1 if lhs.created < rhs.created else 1
    if lhs.uid != rhs.uid:
        return -1 if lhs.uid < rhs.uid else 1
    return 0


def sort_tasks(tasks: list[TaskInfo], reverse: bool = False) -> None:
    """Sort in place by `compare_task` (reversed: last first)."""
    indexes = [name_index(t.name) for t in tasks]
    if all(i is None for i in indexes):
        tasks.sort(key=lambda t: (t.created, t.uid), reverse=reverse)
    elif all(i is not None for i in indexes):
        keyed = sorted(zip(indexes, tasks, strict=True), key=lambda p: (p[0], p[1].created, p[1].uid),
                       reverse=reverse)
        tasks[:] = [t for _, t in keyed]
    else:
        tasks.sort(key=cmp_to_key(compare_task), reverse=reverse)


def first_task(tasks: list[TaskInfo]) -> TaskInfo:
    """The task `sort_tasks` would put first (without sorting when the order is a total one)."""
    indexes = [name_index(t.name) for t in tasks]
    if all(i is None for i in indexes):
        return min(tasks, key=lambda t: (t.created, t.uid))
    if all(i is not None for i in indexes):
        return min(zip(indexes, tasks, strict=True), key=lambda p: (p[0], p[1].created, p[1].uid))[1]
    ordered = list(tasks)  # not a total order: the sort's own first
    sort_tasks(ordered)
    return ordered[0]

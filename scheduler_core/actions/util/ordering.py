"""Ordering helpers shared by the actions: a priority queue over a less-function and the
per-job pending task order.

`PriorityQueue` is Volcano's `util.PriorityQueue`: a binary heap whose order is asked from the
session (queue/job order callbacks) at push time. An element's key is therefore evaluated when
it is pushed back, which is how Volcano re-orders a queue after each job it served.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import TYPE_CHECKING, Generic, TypeVar

from scheduler_core.framework.task_fallback import sort_tasks

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less")

    def __init__(self, item: T, less: Callable[[T, T], bool]) -> None:
        self.item = item
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    """Heap ordered by `less(l, r)` (True when l comes out first)."""

    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._heap: list[_Entry[T]] = [_Entry(i, less) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add an item (its order is evaluated now)."""
        heapq.heappush(self._heap, _Entry(item, self._less))

    def pop(self) -> T:
        """Remove and return the first item."""
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


class KeyedQueue(Generic[T]):
    """PriorityQueue with a sort key computed at push time (same interface, no comparator calls).

    Same pop order as PriorityQueue(less) when the key agrees with `less` and an item's key
    does not change while it sits in the queue (allocate: only the popped job or queue changes,
    and it is re-keyed when pushed back).
    """

    def __init__(self, key: Callable[[T], tuple], items: Iterable[T] = ()) -> None:
        self._key = key
        self._seq = 0
        self._heap: list[tuple[tuple, int, T]] = []
        for item in items:
            self.push(item)

    def push(self, item: T) -> None:
        """Add an item (its key is computed now)."""
        self._seq += 1
        heapq.heappush(self._heap, (self._key(item), self._seq, item))

    def pop(self) -> T:
        """Remove and return the first item."""
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


def order_queue(key: Callable[[T], tuple] | None,
                     less: Callable[[T, T], bool]) -> PriorityQueue[T] | KeyedQueue[T]:
    """A KeyedQueue when the session offers a sort key, else a comparator PriorityQueue."""
    return KeyedQueue(key) if key is not None else PriorityQueue(less)


class TaskList:
    """A job's tasks in session task order, consumed front to back.

    Tasks with the same `sched_key` also have the same priority, so the task-order plugins
    cannot tell them apart: each equivalence class is sorted with the session fallback
    (`task_fallback`: name index, creation time, uid) and the classes are merged with the
    full task comparison.
    This keeps the exact order of `ssn.task_compare` at a fraction of its calls.
    """

    def __init__(self, ssn: Session, tasks: Iterable[TaskInfo]) -> None:
        classes: dict[tuple, list[TaskInfo]] = {}
        for t in tasks:
            classes.setdefault(t.sched_key, []).append(t)
        runs = list(classes.values())
        for ts in runs:
            if len(ts) > 1:
                sort_tasks(ts)
        if len(runs) == 1:
            self._tasks = runs[0]
        else:
            key = cmp_to_key(ssn.task_compare)
            self._tasks = list(heapq.merge(*runs, key=key))
        self._pos = 0
        # identical_after's latest answer: (sched_key, status, node) -> where its run ended.
        self._run_end: tuple[tuple, int] | None = None
        # Remaining tasks per class: lets allocate see whether a gang can still be met.
        self.left: dict[tuple, int] = {k: len(v) for k, v in classes.items()}

    def pop(self) -> TaskInfo:
        """Next task in order."""
        t = self._tasks[self._pos]
        self._pos += 1
        self.left[t.sched_key] -= 1
        return t

    def __len__(self) -> int:
        return len(self._tasks) - self._pos

    def __bool__(self) -> bool:
        return self._pos < len(self._tasks)

    def identical_after(self, first: TaskInfo) -> list[TaskInfo]:
        """The tasks right after `first` (just popped) that are identical to it: same sched_key,
        status and node, in order (allocate's run candidates); nothing is consumed."""
        order, start = self._tasks, self._pos
        key, status, node = first.sched_key, first.status, first.node_name
        # Tasks not yet popped are not changed by their consumer, so a run found earlier still
        # ends where it did: asking again inside it costs no walk (a gang of n identical tasks
        # is asked once per node it fills, which would otherwise walk n tasks each time).
        known = self._run_end
        if known is not None and known[0] == (key, status, node) and start <= known[1]:
            return order[start:known[1]]
        end = start
        while end < len(order):
            t = order[end]
            if t.status is not status or t.node_name != node or t.sched_key != key:
                break
            end += 1
        self._run_end = ((key, status, node), end)
        return order[start:end]

    def remaining_outside(self, failed: set[tuple]) -> int:
        """Tasks still to come whose class is not in `failed`."""
        return sum(n for k, n in self.left.items() if k not in failed)


def job_queue(ssn: Session, jobs: Iterable[JobInfo] = ()) -> PriorityQueue[JobInfo]:
    """A priority queue of jobs in session job order."""
    return PriorityQueue(ssn.job_order_fn, jobs)


def sorted_tasks(ssn: Session, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """Tasks in session task order (equivalence-class aware, see TaskList)."""
    tl = TaskList(ssn, tasks)
    return tl._tasks

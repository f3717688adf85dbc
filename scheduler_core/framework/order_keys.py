"""The order queries that stand for the comparators: sort keys and the queue heaps' closure.

`OrderKeys` is a mixin of `CallbackRegistry` (callbacks.py): it reads the registrations
(`_flat`, `companion`, `_derived`) and composes what the actions' heaps use instead of
`job_order_fn` / `queue_order_fn`, each giving the comparators' order (semantics page section 4):
`job_order_key()` / `queue_order_key()` (every plugin's `key_fn`), `queue_order_static_key(queues)`
(`key_fn`, else `static_key_fn`, valid while no figure moves) and `queue_less()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from scheduler_core.model import JobInfo, QueueInfo

# The queue-order registration's key over a given set of queues (add_queue_order_fn).
STATIC_KEY = "static_key_fn"
# (queues, moving) -> a sort key over them while the plugin's figures stand still (moving: also
# while allocations move them, each queue re-keyed when pushed back), or None (queue order).
StaticKeyFn: TypeAlias = Callable[[list["QueueInfo"], bool], Callable[["QueueInfo"], tuple] | None]


class OrderKeys:
    """Sort keys and comparator closures composed from the queue- and job-order registrations."""

    _derived: dict[str, Any]

    def _flat(self, kind: str) -> list[tuple[str, Any]]:
        raise NotImplementedError  # CallbackRegistry's

    def companion(self, kind: str, name: str, keyword: str) -> Any:
        raise NotImplementedError  # CallbackRegistry's

    def _order_key(self, kind: str, tail: Callable[[Any], tuple]) -> Callable[[Any], tuple] | None:
        if kind in self._derived:
            return self._derived[kind]
        fns = [self.companion(kind, name, "key_fn") for name, _ in self._flat(kind)]
        key = None
        if all(fn is not None for fn in fns):
            keys = [fn for fn in fns if fn is not None]

            def key(item: Any) -> tuple:
                return (*[k(item) for k in keys], *tail(item))

        self._derived[kind] = key
        return key

    def job_order_key(self) -> Callable[[JobInfo], tuple] | None:
        """A sort key equal to `job_compare`'s order, or None when an enabled plugin has no key.

        The key is a snapshot of the job's state: valid while the plugins' figures it reads do
        not change (allocate re-keys a job when it pushes it back).
        """
        return self._order_key("job_order", lambda j: (j.created, j.uid))

    def queue_order_key(self) -> Callable[[QueueInfo], tuple] | None:
        """A sort key equal to `queue_compare`'s order, or None (as `job_order_key`)."""
        return self._order_key("queue_order", lambda q: (q.created, q.name))

    def queue_order_static_key(self, queues: list[QueueInfo],
                               moving: bool = False) -> Callable[[QueueInfo], tuple] | None:
        """A sort key equal to `queue_compare`'s order over `queues` while no plugin's figures
        move (enqueue admits, backfill places best-effort tasks: no share changes), or None.
        `moving=True` (allocate): the key must also hold while allocations move the figures,
        a queue being re-keyed when it is pushed back after its job.

        Per enabled plugin its `key_fn`, else its `static_key_fn(queues, moving)`; None when a
        plugin has neither or declines these queues.
        """
        keys = []
        for name, _ in self._flat("queue_order"):
            key_fn = self.companion("queue_order", name, "key_fn")
            if key_fn is None:
                static = self.companion("queue_order", name, STATIC_KEY)
                key_fn = static(queues, moving) if static is not None else None
            if key_fn is None:
                return None
            keys.append(key_fn)

        def key(q: QueueInfo) -> tuple:
            return (*[k(q) for k in keys], q.created, q.name)

        return key

    def queue_less(self) -> Callable[[QueueInfo, QueueInfo], bool]:
        """`queue_order_fn` as one closure over the enabled callbacks: the same answer for every
        pair, in fewer calls (a queue heap compares once per level at every push and pop).

        Read when an action starts: a registration after it is not seen (none happens then).
        """
        hit = self._derived.get("queue_less")
        if hit is not None:
            return hit
        fns = [fn for _, fn in self._flat("queue_order")]

        # The fallback as a tuple comparison: creation time, then name (as `_fallback`).
        if not fns:
            def less(lhs: QueueInfo, rhs: QueueInfo) -> bool:
                return (lhs.created, lhs.name) < (rhs.created, rhs.name)
        elif len(fns) == 1:
            only = fns[0]

            def less(lhs: QueueInfo, rhs: QueueInfo) -> bool:
                j = only(lhs, rhs)
                if j:
                    return j < 0
                return (lhs.created, lhs.name) < (rhs.created, rhs.name)
        else:
            def less(lhs: QueueInfo, rhs: QueueInfo) -> bool:
                for fn in fns:
                    j = fn(lhs, rhs)
                    if j:
                        return j < 0
                return (lhs.created, lhs.name) < (rhs.created, rhs.name)

        self._derived["queue_less"] = less
        return less

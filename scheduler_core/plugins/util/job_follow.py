"""A per-job value derived from a `JobValues`, kept in step with its changes (issue 27).

drf keeps each job's allocation and share, overcommit each job's reservation in its pool: both
per job of the snapshot, in the job table's order. A `Follower` applies only what the last
`JobValues.values` call changed (`JobValues.moved`: gone, replaced in place, appended uids), so
an open costs the changed jobs, not every job; a call it did not see, or a walk, rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from scheduler_core.plugins.util.job_figures import JobValues

T = TypeVar("T")
U = TypeVar("U")

ABSENT = object()  # Follower.follow's "no value" (a uid new to the map, or gone from it)


class Follower(Generic[T, U]):
    """`fn(value)` per uid of one JobValues, in its mapping's order, kept in step with its calls:
    after each `values` call, `follow` applies only what that call changed (a rebuild when it
    walked, or when a call went unseen)."""

    def __init__(self, fn: Callable[[T], U]) -> None:
        self.fn = fn
        self.map: dict[str, U] = {}
        self._seen = -1

    def follow(self, values: JobValues[T], rebuild: bool = False) -> list[tuple[Any, Any]] | None:
        """Bring `map` up to `values`' last call: the (old, new) pairs it changed (`ABSENT` for
        none), or None when the map was rebuilt (`rebuild`: whatever the call did)."""
        entries, fn, seen = values.jobs, self.fn, self._seen
        self._seen = values.calls
        moved = values.moved
        if rebuild or moved is None or seen != values.calls - 1:
            self.map = {uid: fn(e[2]) for uid, e in entries.items()}
            return None
        mp, pairs = self.map, []
        gone, replaced, appended = moved
        for uid in gone:
            old = mp.pop(uid, ABSENT)
            if old is not ABSENT:
                pairs.append((old, ABSENT))
        for uid in replaced:
            new = fn(entries[uid][2])
            pairs.append((mp.get(uid, ABSENT), new))
            mp[uid] = new
        for uid in appended:
            new = fn(entries[uid][2])
            pairs.append((mp.pop(uid, ABSENT), new))
            mp[uid] = new
        return pairs

"""Which job rows of a kept snapshot the incremental loader's last delta moved.

The write phase's passes over the jobs (job_changes, job_conditions) compare only what changed
since their previous pass; the row of a job is one of the things that can, and only the delta
(schedweb.scheduling.delta.Applier) knows which rows it replaced, added or dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class JobRowLog:
    """Which `LoadedState.jobs` entries the last delta moved, for the write phase's bounded passes
    (job_changes, job_conditions): `gen` counts the deltas since the full load, `moved` holds
    the uids whose row was replaced, added or dropped by the last one (re-read or gone), `own`
    those whose row it set to what our previous cycle wrote (no other writer), `order` each uid's place
    in `state.jobs` (insertion order, as the dict iterates), `memo` what those passes keep with
    this snapshot (it goes with it at a full load)."""

    def __init__(self, jobs: Iterable[str]) -> None:
        self.gen = 0
        self.moved: set[str] = set()
        self.own: set[str] = set()
        self.order = {uid: i for i, uid in enumerate(jobs)}
        self.next = len(self.order)
        self.memo: dict[str, Any] = {}

    def begin(self) -> None:
        """A new delta: what the previous one moved is no longer news."""
        self.gen += 1
        self.moved, self.own = set(), set()

    def added(self, uid: str) -> None:
        """`uid` became a new key of `state.jobs` (at its end)."""
        self.moved.add(uid)
        self.order[uid] = self.next
        self.next += 1

    def dropped(self, uid: str) -> None:
        """`uid` left `state.jobs`."""
        self.moved.add(uid)
        self.order.pop(uid, None)

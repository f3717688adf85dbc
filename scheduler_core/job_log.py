"""Which jobs of a snapshot changed, for figures kept across sessions (issue 27, round 3).

`ClusterSnapshot.jobs` is a `JobTable`: a dict that notes in its `ChangeLog` every job added,
removed or replaced, and that makes each job it holds note its own changes there (a set add):
every `revision` bump (task added, removed, replaced or moved to another status) and every
assignment of the fields kept figures read (`WATCHED`: queue, phase, min_available,
min_resources). A consumer keeps a `LogReader`; while its view is continuous (the same table,
its position not pruned) it gets the uids changed since its last read and visits only those;
otherwise (first read, another table, a break) it gets None and walks every job.

A job logs to the last table that took it. When it leaves a table for another one while still
held by the first (a job in two snapshots), the first marks it `foreign`: reported changed at
every read, so that table's consumers check it as they would without a log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler_core.model import JobInfo

# Segments kept for readers behind; one is cut per read that finds new changes, so this is
# the number of reads (a few per session) a reader may skip before it walks everything again.
_SEGMENTS = 64


class ChangeLog:
    """Uids noted since the last cut (`changed`), and the recent segments cut before it."""

    __slots__ = ("changed", "segments", "base", "foreign")

    def __init__(self) -> None:
        self.changed: set[str] = set()
        self.segments: list[set[str]] = []  # segments[i]: the changes of generation base + i
        self.base = 0
        self.foreign: set[str] = set()

    @property
    def gen(self) -> int:
        """The current generation: a reader at it has seen every change up to the last cut."""
        return self.base + len(self.segments)

    def cut(self) -> int:
        """Close the current segment (when it holds anything); the generation after it."""
        if self.changed:
            self.segments.append(self.changed)
            self.changed = set()
            if len(self.segments) > _SEGMENTS:
                drop = len(self.segments) - _SEGMENTS
                del self.segments[:drop]
                self.base += drop
        return self.gen

    def since(self, pos: int) -> set[str] | None:
        """Uids changed from generation `pos` to now (None: no longer known, walk everything)."""
        now = self.cut()
        if pos < self.base or pos > now:
            return None
        out = set(self.foreign)
        for seg in self.segments[pos - self.base:]:
            out |= seg
        return out

    def reset(self) -> None:
        """An unknown break: every reader walks everything at its next read."""
        self.base = self.gen + 1
        self.segments, self.changed = [], set()


class LogReader:
    """A consumer's position in one table's log."""

    __slots__ = ("log", "pos")

    def __init__(self) -> None:
        self.log: ChangeLog | None = None
        self.pos = 0

    def changed(self, jobs: Mapping[str, Any]) -> tuple[set[str] | None, ChangeLog | None, int]:
        """(uids changed since the last `commit`, or None = walk everything; log; position).

        Pass the log and position to `commit` once the consumer's state reflects them."""
        log = getattr(jobs, "log", None)
        if not isinstance(log, ChangeLog):
            return None, None, 0
        if log is not self.log:
            return None, log, log.cut()
        got = log.since(self.pos)
        return got, log, log.gen

    def commit(self, log: ChangeLog | None, pos: int) -> None:
        """Remember the position the consumer's state now stands at."""
        self.log, self.pos = log, pos


class JobTable(dict):
    """uid -> JobInfo that logs its changes (see the module docstring). `order[uid]` is the
    job's rank in the table's order (increasing with insertion; dict order is insertion order)."""

    __slots__ = ("log", "order", "_next")

    def __init__(self, items: Mapping[str, JobInfo] | Iterable[tuple[str, JobInfo]] = (), /) -> None:
        super().__init__()
        self.log = ChangeLog()
        self.order: dict[str, int] = {}
        self._next = 0
        for uid, job in dict(items).items():
            self[uid] = job

    def __setitem__(self, uid: str, job: JobInfo) -> None:
        old = dict.get(self, uid)
        dict.__setitem__(self, uid, job)
        if old is not job:
            if old is not None:
                self._release(uid, old)
            else:
                self.order[uid] = self._next
                self._next += 1
            prior = job._log
            if prior is not None and prior is not self.log:
                prior.foreign.add(uid)  # its old table no longer hears of it
            job._log = self.log
        self.log.changed.add(uid)

    def __delitem__(self, uid: str) -> None:
        job = dict.pop(self, uid)
        self._release(uid, job)
        del self.order[uid]
        self.log.changed.add(uid)

    def _release(self, uid: str, job: JobInfo) -> None:
        self.log.foreign.discard(uid)
        if job._log is self.log:
            job._log = None

    def pop(self, uid: str, *default: Any) -> Any:
        """dict.pop, logged."""
        if dict.__contains__(self, uid):
            job = dict.__getitem__(self, uid)
            del self[uid]
            return job
        if default:
            return default[0]
        raise KeyError(uid)

    def popitem(self) -> tuple[str, JobInfo]:
        """dict.popitem, logged."""
        uid = next(reversed(self))
        return uid, self.pop(uid)

    def setdefault(self, uid: str, job: Any = None) -> Any:
        """dict.setdefault, logged."""
        if not dict.__contains__(self, uid):
            self[uid] = job
        return dict.__getitem__(self, uid)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """dict.update, logged."""
        for uid, job in dict(*args, **kwargs).items():
            self[uid] = job

    def __ior__(self, other: Any) -> JobTable:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        """dict.clear, logged."""
        for uid in list(self):
            del self[uid]

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Copies and pickles are new tables (their own log): readers of a copy walk everything.
        return (JobTable, (dict(self),))

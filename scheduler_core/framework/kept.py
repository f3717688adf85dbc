"""State kept across sessions on one snapshot (issue 27, item 1).

A caller that keeps its snapshot between cycles (schedweb's incremental load, the forecast's
copy) also keeps a `KeptState`: the plugins' figures that would otherwise be rebuilt from every
job at each session open. The framework only hosts it: each plugin owns its part (`part(name,
factory)`), decides what it keeps and checks it against the snapshot's current objects before
use (job `revision` counters, field values), so a kept part is an optimisation that never
changes a decision. A part must not hold what the session itself changes (the plugins' live
attrs): it keeps the figures as of the last open and the session starts from copies.

`kept_state(snapshot)` is the state a snapshot carries (a weak map: it goes with the snapshot);
`run_session(..., kept=None)` uses it, `kept=False` opens without one (a fresh build).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler_core.job_log import JobTable, LogReader

if TYPE_CHECKING:
    from scheduler_core.model import ClusterSnapshot, JobInfo

T = TypeVar("T")


class KeptState:
    """The plugins' kept parts, by plugin name (any object the plugin chooses)."""

    def __init__(self) -> None:
        self.parts: dict[str, Any] = {}
        self.sessions = 0  # sessions opened with this state
        # The caller keeps the snapshot for later sessions (schedweb's incremental load): what is
        # worth keeping only when a later session reads it is kept from the first session on.
        self.lasting = False

    def keeps_answers(self) -> bool:
        """Whether a session keeps per-job answers (phases, gang records, reasons) for the next:
        from the first session of a lasting state, else from the second (a snapshot used once, a
        fresh build every cycle, would pay for answers nobody reads)."""
        return self.lasting or self.sessions > 1

    def part(self, name: str, factory: Callable[[], T]) -> T:
        """The part of plugin `name`, made by `factory()` on first use."""
        got = self.parts.get(name)
        if got is None:
            got = self.parts[name] = factory()
        return got

    def clear(self) -> None:
        """Forget every part (the next session builds from scratch)."""
        self.parts.clear()


_kept: weakref.WeakKeyDictionary[ClusterSnapshot, KeptState] = weakref.WeakKeyDictionary()


def kept_state(snapshot: ClusterSnapshot) -> KeptState:
    """The state the snapshot carries from one session to the next (made on first use)."""
    got = _kept.get(snapshot)
    if got is None:
        got = _kept[snapshot] = KeptState()
    return got


def resolve(snapshot: ClusterSnapshot, kept: KeptState | bool | None) -> KeptState | None:
    """run_session's `kept` argument: None/True = the snapshot's own, False = none."""
    if kept is None or kept is True:
        return kept_state(snapshot)
    if kept is False:
        return None
    return kept


def any_job(kept: KeptState | None, key: str, jobs: dict[str, JobInfo],
            test: Callable[[JobInfo], bool]) -> bool:
    """Whether `test(job)` holds for some job. With a KeptState each job's answer is kept under
    `key` with the job object and its `revision` (every task added, removed or replaced bumps
    it), so `test` may read only the job's tasks: it runs again only for jobs that moved. The
    job that last answered yes is asked first: while it stands, no job is looked at."""
    if kept is None:
        return any(test(job) for job in jobs.values())
    if isinstance(jobs, JobTable):
        return kept.part(key, _AnyJob).any(jobs, test)
    part: tuple[str | None, dict[str, tuple[JobInfo, int, bool]]] = kept.parts.get(key) or (None, {})
    last, old = part
    if last is not None:
        job, hit = jobs.get(last), old.get(last)
        if job is not None and hit is not None and hit[0] is job and hit[1] == job.revision and hit[2]:
            return True
    new: dict[str, tuple[JobInfo, int, bool]] = {}
    found: str | None = None
    for uid, job in jobs.items():
        hit = old.get(uid)
        if hit is None or hit[0] is not job or hit[1] != job.revision:
            hit = (job, job.revision, test(job))
        new[uid] = hit
        if found is None and hit[2]:
            found = uid
    kept.parts[key] = (found, new)
    return found is not None


class _AnyJob:
    """any_job's part for a snapshot's job table: each job's answer (job, revision, answer) and
    the uids answering yes, brought up to date from the table's change log (scheduler_core.job_log)
    while it is continuous, else by a walk."""

    def __init__(self) -> None:
        self.reader = LogReader()
        self.answers: dict[str, tuple[JobInfo, int, bool]] = {}
        self.yes: set[str] = set()

    def any(self, jobs: JobTable, test: Callable[[JobInfo], bool]) -> bool:
        changed, log, pos = self.reader.changed(jobs)
        answers, yes = self.answers, self.yes
        if changed is None:
            answers, yes = self.answers, self.yes = {}, set()
            changed = jobs.keys()
        old = answers
        for uid in changed:
            job = jobs.get(uid)
            if job is None:
                old.pop(uid, None)
                yes.discard(uid)
                continue
            hit = old.get(uid)
            if hit is None or hit[0] is not job or hit[1] != job.revision:
                hit = old[uid] = (job, job.revision, test(job))
                if hit[2]:
                    yes.add(uid)
                else:
                    yes.discard(uid)
        self.reader.commit(log, pos)
        return bool(yes)


class OwnJobsReader:
    """A LogReader for answers kept per own job of one scheduler instance (framework.sharding:
    `ssn.own_jobs` leaves out the jobs other instances place): the uids changed since the last
    commit plus those whose ownership moved since (the foreign set's difference), or None (walk
    every own job) where the log is broken."""

    __slots__ = ("reader", "foreign", "_next")

    def __init__(self) -> None:
        self.reader = LogReader()
        self.foreign: frozenset[str] = frozenset()
        self._next = self.foreign

    def changed(self, jobs: dict[str, JobInfo], foreign: frozenset[str]) -> tuple[set[str] | None, Any, int]:
        """(uids to look at or None, log, position): pass the last two to `commit`."""
        got, log, pos = self.reader.changed(jobs)
        if got is not None and foreign is not self.foreign and foreign != self.foreign:
            got = got | (foreign ^ self.foreign)
        self._next = foreign
        return got, log, pos

    def commit(self, log: Any, pos: int) -> None:
        """The consumer's answers now stand at `pos` and the foreign set last passed."""
        self.reader.commit(log, pos)
        self.foreign = self._next


"""Per-queue sums of the jobs' figures, kept across sessions (issue 27, item 1).

proportion and capacity (flat and hierarchical) open by summing every job's (allocated,
request, inqueue, elastic) (`queue_attr.job_contribution`) into its queue: work proportional to
every task that exists. `JobSums`, a plugin's part of the session's `KeptState`, keeps each
job's figures with what they were computed from (the job object, its `revision`, which every
task change bumps, and the job fields the figures read) and each queue's sums; an open then
recomputes only the jobs whose inputs moved and re-sums only the queues holding them. Values are
whole numbers (milli-units, bytes), so a re-sum equals a fresh one; queues come out in the order
a fresh build meets them (first job in snapshot order), so every later figure and text is the
same as without the kept state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from scheduler_core.job_log import LogReader
from scheduler_core.model import JobInfo
from scheduler_core.plugins.util.queue_attr import job_contribution
from scheduler_core.resources import Resource

Parts = tuple[Resource, Resource, Resource, Resource]
T = TypeVar("T")


def _signature(job: JobInfo) -> tuple[Any, ...]:
    # min_resources by identity: the entry holds the object, so its id cannot be reused.
    return (job.revision, job.phase, job.min_available, job.queue, job.min_resources)


def _holds(sig: tuple[Any, ...], job: JobInfo) -> bool:
    """The signature taken from `job` still describes it."""
    return (sig[0] == job.revision and sig[1] is job.phase and sig[2] == job.min_available
            and sig[3] == job.queue and sig[4] is job.min_resources)


def _empty() -> Parts:
    return (Resource.empty(), Resource.empty(), Resource.empty(), Resource.empty())


def _add(acc: Parts, parts: Parts) -> None:
    for a, p in zip(acc, parts, strict=True):
        a.add(p)


def _same(a: Parts, b: Parts) -> bool:
    """The same figures, value for value and scalar for scalar."""
    for x, y in zip(a, b, strict=True):
        if x.milli_cpu != y.milli_cpu or x.memory != y.memory or x.scalars != y.scalars:
            return False
    return True


def _count(keys: list[dict[str, int]], parts: Parts, step: int) -> None:
    for counts, p in zip(keys, parts, strict=True):
        for name in p.scalars:
            counts[name] = counts.get(name, 0) + step


_EXACT = float(2 ** 53)


def whole(parts: Parts) -> bool:
    """Every value a whole number that float sums keep exact (in any order)."""
    for r in parts:
        for v in (r.milli_cpu, r.memory, *r.scalars.values()):
            if not v.is_integer() or abs(v) >= _EXACT:
                return False
    return True


class JobSums:
    """Each job's figures and each queue's sums as of the last `sums` call.

    `track=True` (a kept part) also follows the snapshot's change log (scheduler_core.job_log):
    while its view is continuous a call visits only the changed jobs and moves each touched
    queue's sums by the exact difference (old figures out, new in; a scalar dimension leaves a
    sum when no member has it any more, as a fresh sum would not have it), and orders queues by
    their first job's rank in the table. Exact because stored values are whole numbers below
    2**53; a figure that is not (a "2000.05m" request) sends every call back to the full walk.
    """

    def __init__(self, track: bool = False) -> None:
        self.jobs: dict[str, tuple[JobInfo, tuple[Any, ...], Parts]] = {}
        self.queues: dict[str, Parts] = {}
        self.recomputed = 0  # jobs whose figures the last call computed (tests, benchmarks)
        self.visited = 0  # jobs the last call looked at
        self.reader = LogReader() if track else None
        self._members: dict[str, dict[str, int]] = {}  # queue -> uid -> rank in the table
        self._first: dict[str, int] = {}  # queue -> its first job's rank
        self._keys: dict[str, list[dict[str, int]]] = {}  # queue -> per part: scalar -> members having it
        self._inexact = False

    def sums(self, jobs: dict[str, JobInfo]) -> dict[str, Parts]:
        """Per queue named by a job, in first-job order: the sums of its jobs' figures.

        The returned Resources belong to this object: add them into other Resources, never
        change them.
        """
        reader = self.reader
        if reader is None:
            return self._walk(jobs)
        changed, log, pos = reader.changed(jobs)
        if changed is not None and not self._inexact and self._delta(jobs, changed):
            reader.commit(log, pos)
            return self.queues
        out = self._walk(jobs)
        self._index(jobs)
        reader.commit(log if not self._inexact else None, pos)
        return out

    def _walk(self, jobs: dict[str, JobInfo]) -> dict[str, Parts]:
        old = self.jobs
        new: dict[str, tuple[JobInfo, tuple[Any, ...], Parts]] = {}
        # Per queue, in first-job order: its jobs' figures (what a re-sum adds up).
        members: dict[str, list[Parts]] = {}
        touched: set[str] = set()
        reused = 0
        get = old.get
        for uid, job in jobs.items():
            queue = job.queue
            entry = get(uid)
            if entry is not None and entry[0] is job:
                sig = entry[1]
                # The signature still holds (tested inline: this loop runs once per job per open).
                if (sig[0] == job.revision and sig[1] is job.phase and sig[2] == job.min_available
                        and sig[3] == queue and sig[4] is job.min_resources):
                    new[uid] = entry
                    reused += 1
                    parts = members.get(queue)
                    if parts is None:
                        parts = members[queue] = []
                    parts.append(entry[2])
                    continue
            if entry is not None:
                touched.add(entry[1][3])
            touched.add(queue)
            entry = new[uid] = (job, _signature(job), job_contribution(job))
            parts = members.get(queue)
            if parts is None:
                parts = members[queue] = []
            parts.append(entry[2])
        if reused < len(old):  # jobs gone since the last call
            for uid in old.keys() - jobs.keys():
                touched.add(old[uid][1][3])
        self.recomputed, self.visited = len(jobs) - reused, len(jobs)
        kept = self.queues
        touched |= members.keys() - kept.keys()
        if touched:
            fresh = {}
            for q in touched:
                figures = members.get(q)
                if figures is not None:
                    acc = fresh[q] = _empty()
                    for parts in figures:
                        _add(acc, parts)
            kept = {**kept, **fresh}
        self.jobs = new
        self.queues = {q: kept[q] for q in members}
        return self.queues

    def _index(self, jobs: dict[str, JobInfo]) -> None:
        """The delta path's structures, from a full walk's entries."""
        order = getattr(jobs, "order", None)
        self._members, self._first, self._keys = {}, {}, {}
        self._inexact = order is None or not all(whole(p) for p in self.queues.values())
        if self._inexact:
            return
        for uid, (_, sig, parts) in self.jobs.items():
            if not whole(parts):
                self._inexact = True
                return
            q, rank = sig[3], order[uid]
            members = self._members.get(q)
            if members is None:
                members = self._members[q] = {}
                self._first[q] = rank
                self._keys[q] = [{}, {}, {}, {}]
            members[uid] = rank
            _count(self._keys[q], parts, 1)

    def _delta(self, jobs: dict[str, JobInfo], changed: set[str]) -> bool:
        """Apply the changed jobs; False (walk instead) when a figure or a sum is not whole."""
        updates = []
        same = 0
        reranked = False  # a queue's first job moved: the queues' order may have
        for uid in changed:
            job, entry = jobs.get(uid), self.jobs.get(uid)
            if job is not None and entry is not None and entry[0] is job and _holds(entry[1], job):
                q, rank = entry[1][3], jobs.order[uid]  # type: ignore[attr-defined]
                if self._members[q][uid] != rank:  # the same job taken out and put back: now last
                    self._members[q][uid] = rank
                    self._first[q] = min(self._members[q].values())
                    reranked = True
                continue
            new = (job, _signature(job), job_contribution(job)) if job is not None else None
            if new is not None and not whole(new[2]):
                return False
            if new is not None and entry is not None and entry[1][3] == new[1][3] and _same(entry[2], new[2]):
                # Moved but with the same figures (a bound task now Running): the sums stand.
                self.jobs[uid] = new
                same += 1
                q, rank = new[1][3], jobs.order[uid]  # type: ignore[attr-defined]
                if self._members[q][uid] != rank:
                    self._members[q][uid] = rank
                    self._first[q] = min(self._members[q].values())
                    reranked = True
                continue
            updates.append((uid, entry, new))
        self.visited, self.recomputed = len(changed), same + sum(u[2] is not None for u in updates)
        if not updates:
            if reranked:
                first = self._first
                self.queues = {q: self.queues[q] for q in sorted(self._members, key=first.__getitem__)}
            return True
        order, members, first, keys = jobs.order, self._members, self._first, self._keys  # type: ignore[attr-defined]
        copies: dict[str, Parts] = {}
        held_sums = self.queues

        for uid, old, new in updates:
            if old is not None:
                q = old[1][3]
                acc = copies.get(q)
                if acc is None:  # copy on write: the sums handed out last time stay as they were
                    held = held_sums.get(q)
                    acc = copies[q] = (held[0].clone(), held[1].clone(), held[2].clone(), held[3].clone()) \
                        if held is not None else _empty()
                rank = members[q].pop(uid)
                for a, p, counts in zip(acc, old[2], keys[q], strict=True):
                    a.sub_without_assert(p)
                    if p.scalars:
                        for name in p.scalars:
                            left = counts[name] - 1
                            if left:
                                counts[name] = left
                            else:  # no member has it: nor would a fresh sum
                                del counts[name], a.scalars[name]
                if not members[q]:
                    del members[q], first[q], keys[q]
                elif rank == first[q]:
                    first[q] = min(members[q].values())
                del self.jobs[uid]
            if new is not None:
                q, rank = new[1][3], order[uid]
                acc = copies.get(q)
                if acc is None:
                    held = held_sums.get(q)
                    acc = copies[q] = (held[0].clone(), held[1].clone(), held[2].clone(), held[3].clone()) \
                        if held is not None else _empty()
                if q not in members:
                    members[q], first[q], keys[q] = {}, rank, [{}, {}, {}, {}]
                members[q][uid] = rank
                if rank < first[q]:
                    first[q] = rank
                parts = new[2]
                _add(acc, parts)
                if parts[0].scalars or parts[1].scalars or parts[2].scalars or parts[3].scalars:
                    _count(keys[q], parts, 1)
                self.jobs[uid] = new
        if not all(whole(copies[q]) for q in copies if q in members):
            # A sum past 2**53: float sums now depend on their order. Walk, re-summing every
            # queue in table order (the entries are current; the sums are not kept).
            self._inexact, self.queues = True, {}
            return False
        queues = {**self.queues, **copies}
        self.queues = {q: queues[q] for q in sorted(members, key=first.__getitem__)}
        return True


class JobValues(Generic[T]):
    """`fn(job)` per job, recomputed only when the job's inputs moved (the same test as JobSums:
    `fn` may read the job's tasks and sums, phase, min_available, min_resources and queue).
    `track=True`: follows the change log as JobSums does, visiting only the changed jobs."""

    def __init__(self, fn: Callable[[JobInfo], T], track: bool = False) -> None:
        self.fn = fn
        self.jobs: dict[str, tuple[JobInfo, tuple[Any, ...], T]] = {}
        self.recomputed = 0
        self.visited = 0
        self.reader = LogReader() if track else None
        self._ranks: dict[str, int] = {}  # uid -> rank in the table, as `jobs` is ordered
        self.calls = 0  # `values` calls (a Follower checks it saw every one)
        # What the last call changed in the mapping: (gone, replaced in place, appended in this
        # order) uids, or None when it rebuilt the mapping (a walk).
        self.moved: tuple[list[str], list[str], list[str]] | None = None

    def values(self, jobs: dict[str, JobInfo]) -> dict[str, tuple[JobInfo, tuple[Any, ...], T]]:
        """uid -> (job, signature, value) for every job, in the jobs' order (never change a value,
        nor the mapping: it is this object's)."""
        reader = self.reader
        self.calls += 1
        self.moved = None
        if reader is not None:
            changed, log, pos = reader.changed(jobs)
            if changed is not None:
                self._delta(jobs, changed)
                reader.commit(log, pos)
                return self.jobs
        old, fn = self.jobs, self.fn
        new: dict[str, tuple[JobInfo, tuple[Any, ...], T]] = {}
        n = 0
        get = old.get
        for uid, job in jobs.items():
            entry = get(uid)
            if entry is not None and entry[0] is job:
                sig = entry[1]  # the signature test, as in JobSums.sums
                if (sig[0] == job.revision and sig[1] is job.phase and sig[2] == job.min_available
                        and sig[3] == job.queue and sig[4] is job.min_resources):
                    new[uid] = entry
                    continue
            new[uid] = (job, _signature(job), fn(job))
            n += 1
        self.jobs, self.recomputed, self.visited = new, n, len(jobs)
        if reader is not None:
            order = getattr(jobs, "order", None)
            self._ranks = dict(order) if order is not None else {}
            reader.commit(log if order is not None else None, pos)
        return new

    def _delta(self, jobs: dict[str, JobInfo], changed: set[str]) -> None:
        out, ranks, fn = self.jobs, self._ranks, self.fn
        order = jobs.order  # type: ignore[attr-defined]
        last: list[str] = []  # new to the table since the last call: appended in table order
        gone: list[str] = []
        replaced: list[str] = []
        n = 0
        for uid in changed:
            job = jobs.get(uid)
            if job is None:
                out.pop(uid, None)
                ranks.pop(uid, None)
                gone.append(uid)
                continue
            entry = out.get(uid)
            if ranks.get(uid) != order[uid]:
                out.pop(uid, None)
                last.append(uid)
                continue
            if entry is not None and entry[0] is job and _holds(entry[1], job):
                continue
            out[uid] = (job, _signature(job), fn(job))  # replaced in place: its rank is unchanged
            replaced.append(uid)
            n += 1
        last.sort(key=order.__getitem__)
        self.moved = (gone, replaced, last)
        for uid in last:
            job = jobs[uid]
            out[uid] = (job, _signature(job), fn(job))
            ranks[uid] = order[uid]
            n += 1
        self.recomputed, self.visited = n, len(changed)


def job_values(ssn: Any, key: str,
               fn: Callable[[JobInfo], T]) -> dict[str, tuple[JobInfo, tuple[Any, ...], T]]:
    """JobValues.values for the session's jobs, kept under `key` when the session has a KeptState."""
    return values_holder(ssn, key, fn).jobs


def values_holder(ssn: Any, key: str, fn: Callable[[JobInfo], T]) -> JobValues[T]:
    """The JobValues behind `job_values` after its call for this session (kept under `key` when
    the session has a KeptState, else a fresh one): its `moved` and `calls` for a Follower."""
    kept = getattr(ssn, "kept", None)
    holder = kept.part(key, lambda: JobValues(fn, track=True)) if kept is not None else JobValues(fn)
    holder.values(ssn.jobs)
    return holder


def job_sums(ssn: Any, plugin: str) -> dict[str, Parts]:
    """The session's per-queue sums for `plugin`: through its kept part when the session has a
    KeptState, else summed from scratch."""
    kept = getattr(ssn, "kept", None)
    holder = kept.part(f"{plugin}.job_sums", lambda: JobSums(track=True)) if kept is not None else JobSums()
    return holder.sums(ssn.jobs)

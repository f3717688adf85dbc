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

from scheduler_core.model import JobInfo
from scheduler_core.plugins.util.queue_attr import job_contribution
from scheduler_core.resources import Resource

Parts = tuple[Resource, Resource, Resource, Resource]
T = TypeVar("T")


def _signature(job: JobInfo) -> tuple[Any, ...]:
    # min_resources by identity: the entry holds the object, so its id cannot be reused.
    return (job.revision, job.phase, job.min_available, job.queue, job.min_resources)


def _empty() -> Parts:
    return (Resource.empty(), Resource.empty(), Resource.empty(), Resource.empty())


def _add(acc: Parts, parts: Parts) -> None:
    for a, p in zip(acc, parts, strict=True):
        a.add(p)


class JobSums:
    """Each job's figures and each queue's sums as of the last `sums` call."""

    def __init__(self) -> None:
        self.jobs: dict[str, tuple[JobInfo, tuple[Any, ...], Parts]] = {}
        self.queues: dict[str, Parts] = {}
        self.recomputed = 0  # jobs whose figures the last call computed (tests, benchmarks)

    def sums(self, jobs: dict[str, JobInfo]) -> dict[str, Parts]:
        """Per queue named by a job, in first-job order: the sums of its jobs' figures.

        The returned Resources belong to this object: add them into other Resources, never
        change them.
        """
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
        self.recomputed = len(jobs) - reused
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


class JobValues(Generic[T]):
    """`fn(job)` per job, recomputed only when the job's inputs moved (the same test as JobSums:
    `fn` may read the job's tasks and sums, phase, min_available, min_resources and queue)."""

    def __init__(self, fn: Callable[[JobInfo], T]) -> None:
        self.fn = fn
        self.jobs: dict[str, tuple[JobInfo, tuple[Any, ...], T]] = {}
        self.recomputed = 0

    def values(self, jobs: dict[str, JobInfo]) -> dict[str, tuple[JobInfo, tuple[Any, ...], T]]:
        """uid -> (job, signature, value) for every job, in the jobs' order (never change a value)."""
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
        self.jobs, self.recomputed = new, n
        return new


def job_values(ssn: Any, key: str,
               fn: Callable[[JobInfo], T]) -> dict[str, tuple[JobInfo, tuple[Any, ...], T]]:
    """JobValues.values for the session's jobs, kept under `key` when the session has a KeptState."""
    kept = getattr(ssn, "kept", None)
    holder = kept.part(key, lambda: JobValues(fn)) if kept is not None else JobValues(fn)
    return holder.values(ssn.jobs)


def job_sums(ssn: Any, plugin: str) -> dict[str, Parts]:
    """The session's per-queue sums for `plugin`: through its kept part when the session has a
    KeptState, else summed from scratch."""
    kept = getattr(ssn, "kept", None)
    holder = kept.part(f"{plugin}.job_sums", JobSums) if kept is not None else JobSums()
    return holder.sums(ssn.jobs)

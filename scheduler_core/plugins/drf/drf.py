"""drf plugin: dominant resource fairness between jobs (Volcano's `drf`, flat mode).

A job's share is its dominant share: max over the cluster's resource dimensions of
allocated / total (resources.share). Job order: lower share first. Preemptable: a victim is
allowed while the preemptor's share after placing its task stays below (or equal within
1e-6 to) the victim job's share after losing the victims chosen so far.
Namespace order and hierarchical DRF are not implemented. At close each job's share goes to the
result (`job_gauges["job_share"]`: Volcano's `volcano_job_share`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.interface import Event, EventHandler, Plugin
from scheduler_core.plugins.util.job_figures import JobValues, values_holder
from scheduler_core.plugins.util.job_follow import Follower
from scheduler_core.resources import Resource, share

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo

SHARE_DELTA = 0.000001


def dominant_share(allocated: Resource, total: Resource) -> float:
    """max over total's dimensions of share(allocated, total) (Volcano's calculateShare)."""
    res = 0.0
    for name in total.resource_names():
        res = max(res, share(allocated.get(name), total.get(name)))
    return res


def _allocated(job: JobInfo) -> Resource:
    return job.allocated.clone()


def _share(a: Resource, dims: list[tuple[str, float]]) -> float:
    """dominant_share with the total's dimensions resolved (hot: every event)."""
    res = 0.0
    for name, total in dims:
        v = a.milli_cpu if name == "cpu" else a.memory if name == "memory" else a.scalars.get(name, 0.0)
        s = share(v, total)
        if s > res:
            res = s
    return res


def _same(a: Resource) -> Resource:
    return a


class _KeptShares:
    """drf's part of the KeptState: each job's allocation and share as of the last open, in the
    order of the kept allocations (`Follower`s of them: only the jobs a call changed are looked
    at; every share again when the cluster's dimensions change)."""

    def __init__(self) -> None:
        self.allocated: Follower[Resource, Resource] = Follower(_same)
        self.shares: Follower[Resource, float] = Follower(_same)  # type: ignore[arg-type]
        self.dims: list[tuple[str, float]] | None = None

    def open(self, holder: JobValues[Resource],
             dims: list[tuple[str, float]]) -> tuple[dict[str, Resource], dict[str, float]]:
        """The session's own (allocation, share) dicts, brought up to the holder's last call."""
        self.allocated.follow(holder)
        moved = dims != self.dims
        self.dims = list(dims)
        self.shares.fn = lambda a: _share(a, dims)
        self.shares.follow(holder, rebuild=moved)
        return dict(self.allocated.map), dict(self.shares.map)


class DrfPlugin(Plugin):
    """Job order by dominant share and share-based preemption victims."""

    name = "drf"

    def __init__(self, arguments: dict | None = None) -> None:
        super().__init__(arguments)
        self.allocated: dict[str, Resource] = {}
        self.shares: dict[str, float] = {}
        self.total = Resource.empty()
        self._dims: list[tuple[str, float]] = []
        self._owned: set[str] = set()  # jobs whose `allocated` entry is this session's own copy

    def _update(self, uid: str) -> None:
        self.shares[uid] = _share(self.allocated[uid], self._dims)

    def _own(self, uid: str) -> Resource:
        """The job's allocation, copied first if it is still the kept one (about to change)."""
        if uid not in self._owned:
            self._owned.add(uid)
            self.allocated[uid] = self.allocated[uid].clone()
        return self.allocated[uid]

    def on_session_open(self, ssn: Session) -> None:
        """Compute every job's allocation and share; register order, victims and events."""
        self.total = ssn.total_resource.clone()
        self._dims = [(name, self.total.get(name)) for name in self.total.resource_names()]
        # JobInfo keeps the sum of its allocated-status requests current (integers: exact). The
        # copies and shares are kept across sessions (plugins.util.job_figures) and shared until an
        # event changes a job's (copy on write, `_own`).
        holder = values_holder(ssn, "drf.allocated", _allocated)
        if ssn.kept is not None:
            self.allocated, self.shares = ssn.kept.part("drf.shares", _KeptShares).open(holder, self._dims)
        else:
            self.allocated = {uid: e[2] for uid, e in holder.jobs.items()}
            self.shares = {uid: _share(a, self._dims) for uid, a in self.allocated.items()}
        self._owned = set()

        def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
            ls, rs = self.shares[l.uid], self.shares[r.uid]
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            lalloc = self.allocated[preemptor.job_uid].clone().add(preemptor.resreq)
            ls = dominant_share(lalloc, self.total)
            left: dict[str, Resource] = {}
            victims = []
            for t in preemptees:
                if t.job_uid not in left:
                    left[t.job_uid] = self.allocated[t.job_uid].clone()
                # Cumulative like Volcano: each candidate lowers its job's remaining allocation.
                rs = dominant_share(left[t.job_uid].sub_without_assert(t.resreq), self.total)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    victims.append(t)
            return victims, 1

        def on_allocate(ev: Event) -> None:
            self._own(ev.task.job_uid).add(ev.task.resreq)
            self._update(ev.task.job_uid)

        def on_allocate_run(events: list[Event]) -> None:
            # on_allocate per event: the requests added in order, each job's share updated once.
            jobs: dict[str, None] = {}
            for ev in events:
                self._own(ev.task.job_uid).add(ev.task.resreq)
                jobs[ev.task.job_uid] = None
            for uid in jobs:
                self._update(uid)

        def on_deallocate(ev: Event) -> None:
            self._own(ev.task.job_uid).sub_without_assert(ev.task.resreq)
            self._update(ev.task.job_uid)

        ssn.add_job_order_fn(self.name, job_order, key_fn=lambda job: self.shares[job.uid])
        ssn.add_preemptable_fn(self.name, preemptable)
        ssn.add_event_handler(EventHandler(allocate_func=on_allocate, deallocate_func=on_deallocate,
                                           allocate_batch_func=on_allocate_run))

    def on_session_close(self, ssn: Session) -> None:
        """Report every job's share at close (Volcano's `volcano_job_share`), drop per-session state."""
        ssn.result.job_gauges["job_share"] = dict(self.shares)
        self.allocated.clear()
        self.shares.clear()

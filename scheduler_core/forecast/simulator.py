"""The cluster as the next cycles would load it: one snapshot evolved cycle by cycle.

Time runs on the cycle grid `t0 + k * period` (k = 0 is the committed state at `t0`). Between
two cycles the snapshot changes exactly as the database would between two real cycles
(schedweb.scheduling: the cycle's writes, then the simulated agent, then the next load):
- a task bound at cycle k is Running from `t_k` (Binding -> Running, `started = t_k`);
- a pipelined task, or an allocated one whose gang was not bound, is Pending again (pipelining
  lasts one session; only binds, evictions and pipelines are written);
- an evicted task is Releasing until `release_grace_s` has passed, then Pending (its job is
  alive: the controller recreates the pod); a task already Releasing at t0 leaves after the grace;
- a Running task ends at `started + duration` (declared), else `started + runtime_estimates[queue]`
  (history), else never (unknown): the first cycle at or after its end sees it Succeeded
  (an end at or before t0 counts from cycle 1); a job whose tasks have all finished leaves;
- job phases are the session's (`result.job_phase`); a Completed job leaves, keeping only tasks
  that still hold a node (as the loader keeps them).
Pending tasks of a job keep the job's task order, so a state reached twice is the same state.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from scheduler_core.forecast.clone import clone_snapshot, share_specs
from scheduler_core.forecast.types import Basis
from scheduler_core.framework.conf import SchedulerConf
from scheduler_core.model import (
    OCCUPYING_STATUSES,
    TERMINAL_STATUSES,
    ClusterSnapshot,
    JobInfo,
    JobPhase,
    TaskInfo,
    TaskStatus,
)
from scheduler_core.resources import Resource
from scheduler_core.result import SessionResult

if TYPE_CHECKING:
    from scheduler_core.framework.kept import KeptState
    from scheduler_core.framework.sharding import Sharding

EPS = 1e-9
_STARTED = (TaskStatus.RUNNING, TaskStatus.BINDING, TaskStatus.BOUND)


class Simulator:
    """One snapshot evolved across simulated cycles; `run_cycle(k)` runs the real session."""

    def __init__(self, snapshot: ClusterSnapshot, *, now: float | None = None, period: float = 2.0,
                 release_grace_s: float | None = None, runtime_estimates: Mapping[str, float] | None = None,
                 copy: bool = True) -> None:
        if not period > 0:
            raise ValueError(f"period must be positive, got {period!r}")
        if copy:
            self.snap = clone_snapshot(snapshot)
        else:
            self.snap = snapshot
            share_specs(snapshot)
        if now is not None:
            self.snap.now = float(now)
        self.t0 = self.snap.now
        self.period = float(period)
        grace = self.period if release_grace_s is None else release_grace_s
        self.grace_cycles = max(1, math.ceil(grace / self.period - EPS))
        self.estimates = dict(runtime_estimates or {})
        self.k = -1  # last cycle run
        self.advanced = 0  # ends and releases are applied up to this cycle
        self.tasks: dict[str, TaskInfo] = {}
        self.phases: dict[str, str] = {}
        self._ends: list[tuple[int, str]] = []   # heap of (cycle the task is seen ended, uid)
        self._end_of: dict[str, int] = {}        # live entries of _ends
        self._end_basis: dict[str, Basis] = {}
        self.unknown: set[str] = set()           # running tasks whose end nobody knows
        self._releases: list[tuple[int, str]] = []
        self._release_of: dict[str, int] = {}
        self._times: list[int] = []              # other cycles where something may change
        self.history_seen = False                # an estimated (history) end has been applied
        self.pending_version = 0                 # bumped whenever the set of Pending tasks changes
        self._kept: dict[str, KeptState] = {}    # per scheduler instance (sharded runs)
        for job in self.snap.jobs.values():
            self._register(job)
            for task in job.tasks.values():
                if task.status in _STARTED:
                    base = task.started
                    if base is None and task.status is not TaskStatus.RUNNING:
                        base = self.t0  # bound, not running yet: it starts now
                    self._schedule_end(task, job, base, 1)
                elif task.status is TaskStatus.RELEASING:
                    self._schedule_release(task, 0)

    # -- the clock -------------------------------------------------------------------------------
    def instant(self, k: int) -> float:
        """Unix time of cycle k."""
        return self.t0 + k * self.period

    def cycle_at_or_after(self, t: float, strict: bool = False) -> int:
        """First cycle whose instant is >= t (> t when strict)."""
        x = (t - self.t0) / self.period
        if strict:
            return math.floor(x + EPS) + 1
        return math.ceil(x - EPS)

    def add_time_event(self, k: int) -> None:
        """A cycle at which something outside the tasks may change (plugin clocks, arrivals)."""
        if k > self.advanced:
            heapq.heappush(self._times, k)

    def next_event(self) -> int | None:
        """The first cycle after those applied at which the snapshot may change, or None."""
        for heap, live in ((self._ends, self._end_of), (self._releases, self._release_of)):
            while heap and live.get(heap[0][1]) != heap[0][0]:
                heapq.heappop(heap)  # stale: the task was evicted or released meanwhile
        while self._times and self._times[0] <= self.advanced:
            heapq.heappop(self._times)
        due = [h[0][0] for h in (self._ends, self._releases) if h]
        if self._times:
            due.append(self._times[0])
        return min(due, default=None)

    # -- bookkeeping -------------------------------------------------------------------------------
    def _register(self, job: JobInfo) -> None:
        self.phases[job.uid] = job.phase.value
        for uid, task in job.tasks.items():
            self.tasks[uid] = task

    def add_jobs(self, jobs: Iterable[JobInfo]) -> None:
        """New submissions (Pending tasks), visible from the next cycle on."""
        for job in jobs:
            tasks = list(job.tasks.values())
            # Re-index from scratch (as ClusterSnapshot.build does): the job may come indexed.
            job.tasks, job.task_status_index = {}, {}
            job.allocated, job.total_request = Resource.empty(), Resource.empty()
            job._pending_be = job._ready = job._valid = 0
            self.snap.jobs[job.uid] = job
            for task in tasks:
                self.snap.add_task(task)
            self._register(job)
        self.pending_version += 1

    def _duration(self, task: TaskInfo, job: JobInfo) -> tuple[float | None, Basis]:
        if task.duration is not None:
            return task.duration, Basis.DECLARED
        estimate = self.estimates.get(job.queue)
        if estimate is not None:
            return float(estimate), Basis.HISTORY
        return None, Basis.UNKNOWN

    def _schedule_end(self, task: TaskInfo, job: JobInfo, started: float | None, earliest: int) -> None:
        duration, basis = self._duration(task, job)
        if duration is None or started is None:
            self.unknown.add(task.uid)
            return
        k = max(earliest, self.cycle_at_or_after(started + duration))
        self._end_of[task.uid] = k
        self._end_basis[task.uid] = basis
        heapq.heappush(self._ends, (k, task.uid))

    def _schedule_release(self, task: TaskInfo, evicted_at: int) -> None:
        k = evicted_at + self.grace_cycles
        self._release_of[task.uid] = k
        heapq.heappush(self._releases, (k, task.uid))

    def _used(self, task: TaskInfo, sign: int) -> None:
        ns = self.snap.namespaces.get(task.namespace)
        if ns is not None:
            if sign > 0:
                ns.used.add(task.resreq)
            else:
                ns.used.sub_without_assert(task.resreq)

    def _to_pending(self, task: TaskInfo, job: JobInfo) -> None:
        """Off its node, Pending (pipelined / unbound allocations / released evictions)."""
        node = self.snap.nodes.get(task.node_name) if task.node_name else None
        if node is not None:
            node.remove_task(task)
        job.update_task_status(task, TaskStatus.PENDING)
        task.node_name = None
        self.pending_version += 1

    def _reorder_pending(self, jobs: Iterable[str]) -> None:
        # Tasks coming back to Pending join the end of the job's index: restore the job's task
        # order so that the same set of pending tasks is always the same state.
        for uid in jobs:
            job = self.snap.jobs.get(uid)
            bucket = job.task_status_index.get(TaskStatus.PENDING) if job is not None else None
            if job is not None and bucket is not None and len(bucket) > 1:
                ordered = {u: t for u, t in job.tasks.items() if u in bucket}
                job.task_status_index[TaskStatus.PENDING] = ordered

    # -- between cycles ----------------------------------------------------------------------------
    def advance_to(self, k: int) -> set[str]:
        """Apply every end and release due at or before cycle k; returns the jobs they touched."""
        touched: set[str] = set()
        returned: set[str] = set()
        while self._ends and self._ends[0][0] <= k:
            due, uid = heapq.heappop(self._ends)
            if self._end_of.get(uid) != due:
                continue  # evicted meanwhile
            del self._end_of[uid]
            task = self.tasks[uid]
            job = self.snap.jobs.get(task.job_uid)
            if job is None or task.status not in _STARTED:
                continue
            if self._end_basis.pop(uid) is Basis.HISTORY:
                self.history_seen = True
            node = self.snap.nodes.get(task.node_name) if task.node_name else None
            if node is not None:
                node.remove_task(task)
            job.update_task_status(task, TaskStatus.SUCCEEDED)
            task.node_name = None
            self._used(task, -1)
            touched.add(job.uid)
        while self._releases and self._releases[0][0] <= k:
            due, uid = heapq.heappop(self._releases)
            if self._release_of.get(uid) != due:
                continue
            del self._release_of[uid]
            task = self.tasks[uid]
            job = self.snap.jobs.get(task.job_uid)
            if job is None or task.status is not TaskStatus.RELEASING:
                continue
            self._used(task, -1)
            self._to_pending(task, job)
            task.started = None
            touched.add(job.uid)
            returned.add(job.uid)
        for uid in touched:
            job = self.snap.jobs.get(uid)
            if job is not None and all(t.status in TERMINAL_STATUSES for t in job.tasks.values()):
                self._drop_job(job)  # finished: the agent marks it Completed, the loader skips it
        self._reorder_pending(returned)
        self.advanced = max(self.advanced, k)
        return touched

    def _drop_job(self, job: JobInfo) -> None:
        del self.snap.jobs[job.uid]
        self.phases.pop(job.uid, None)

    # -- one cycle ---------------------------------------------------------------------------------
    def run_cycle(self, k: int, conf: SchedulerConf | None,
                  shardings: Sequence[Sharding] = ()) -> tuple[list[SessionResult], bool]:
        """Apply what is due, run the real session at cycle k, then turn the snapshot into what the
        next cycle would load. Returns (results, changed): changed is False when the next cycle
        would see the very same state (no bind, eviction, pipeline or phase change).

        `shardings`: the scheduler instances of a sharded cluster (framework.sharding), each
        placing its own jobs in its mode; their sessions run one after the other, each on what
        the one before it decided (as their commits would land), each with its own kept state.
        Empty: the one unsharded session."""
        self.advance_to(k)
        self.k = k
        self.snap.now = self.instant(k)
        results, changed = [], False
        for sharding in shardings or (None,):
            result, moved = self._session(k, conf, sharding)
            results.append(result)
            changed = changed or moved
        return results, changed

    def _session(self, k: int, conf: SchedulerConf | None,
                 sharding: Sharding | None) -> tuple[SessionResult, bool]:
        from scheduler_core.framework.kept import KeptState
        from scheduler_core.scheduler import run_session  # late: imports every plugin

        kept = None if sharding is None else self._kept.setdefault(sharding.shard_name, KeptState())
        result = run_session(self.snap, conf, record_scores=False,  # never inherit a caller's recording
                             sharding=sharding, kept=kept)
        changed = bool(result.binds or result.evictions or result.pipelined)
        t = self.instant(k)
        for uid in result.binds:
            task = self.tasks[uid]
            job = self.snap.jobs[task.job_uid]
            job.update_task_status(task, TaskStatus.RUNNING)
            task.started = t
            self._used(task, +1)
            self._schedule_end(task, job, t, k + 1)
        if result.binds:
            self.pending_version += 1
        for uid in result.evictions:
            task = self.tasks[uid]
            self._end_of.pop(uid, None)
            self._end_basis.pop(uid, None)
            self.unknown.discard(uid)
            if task.status is TaskStatus.RELEASING:
                self._schedule_release(task, k)
        reverted: set[str] = set()
        for uid, node_name in result.pipelined.items():
            task = self.tasks[uid]
            job = self.snap.jobs[task.job_uid]
            if task.status is TaskStatus.PIPELINED:
                self._to_pending(task, job)
                task.nominated_node = node_name
                reverted.add(job.uid)
        for job in self.snap.jobs.values():
            allocated = job.task_status_index.get(TaskStatus.ALLOCATED)
            if allocated:  # placed but not bound (gang not ready): not written, Pending next cycle
                for task in list(allocated.values()):
                    self._to_pending(task, job)
                reverted.add(job.uid)
        for uid, phase in result.job_phase.items():
            if self.phases.get(uid) != phase:
                changed = True
                self.phases[uid] = phase
                if phase == JobPhase.COMPLETED.value and uid in self.snap.jobs:
                    self._complete(self.snap.jobs[uid])
        self._reorder_pending(reverted)
        return result, changed

    def _complete(self, job: JobInfo) -> None:
        """A job the session called Completed: gone, except tasks that still hold a node."""
        holding = [t for t in job.tasks.values() if t.status in OCCUPYING_STATUSES]
        if not holding:
            self._drop_job(job)
            return
        for task in list(job.tasks.values()):
            if task.status not in OCCUPYING_STATUSES:
                job.delete_task(task)
        job.phase = JobPhase.RUNNING
        self.phases[job.uid] = job.phase.value
        self.pending_version += 1

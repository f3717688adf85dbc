"""Per-row capacity of the victims a preemptor could possibly get, kept current.

`VictimIndex.capacity` sums every candidate ever (a loose, fixed bound). `VictimCapacity` sums,
per queue and row, only the still Running candidates of jobs that pass the session's victim
job filters (`ssn.victim_job_filters(kind)`, e.g. gang: a job at min_member gives nothing).
A node where future idle plus that sum cannot fit the preemptor would get empty or too few
victims from the plugins, so the actions skip it without asking them: same decisions, far
fewer node checks. Jobs whose tasks changed status (seen through a session event handler)
are re-summed lazily before the next query. Sums are float; queries allow a tiny slack, so
rounding can only let a node through to the exact check, never skip one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.actions.victims.victims import lacks_scalar, needed_columns
from scheduler_core.framework.interface import Event, EventHandler
from scheduler_core.model import TaskStatus
from scheduler_core.resources import MIN_RESOURCE

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scheduler_core.actions.victims.victims import VictimIndex
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo

# Slack of the bound against float rounding of the running sums (values are stored units:
# milli-cpu, bytes; one unit is far below any request and far above the rounding).
SLACK_REL = 1e-9
SLACK_ABS = 1.0


class VictimCapacity:
    """Running candidates of filter-passing jobs, summed per queue and row."""

    def __init__(self, ssn: Session, index: VictimIndex, kind: str, queues: Iterable[str] = ()) -> None:
        self.ssn = ssn
        self.filters: list[Callable[[JobInfo], bool]] | None = ssn.victim_job_filters(kind)
        table = ssn.node_table
        # job uid -> {task uid: (task, row, request vector)} of its candidates
        self.tasks: dict[str, dict[str, tuple[TaskInfo, int, np.ndarray]]] = {}
        for row, tasks in enumerate(index.by_row):
            for t in tasks:
                self.tasks.setdefault(t.job_uid, {})[t.uid] = (t, row, index.vec[t.uid])
        self.cap: dict[str, np.ndarray] = {}
        self.count: dict[str, np.ndarray] = {}  # candidates summed per row (exact, unlike cap)
        # job uid -> task uids counted in the sums; jobs whose filters passed at the last look
        self.added: dict[str, set[str]] = {}
        self.eligible: set[str] = set()
        # Sum over `queues` (e.g. every reclaimable queue), kept alongside the per-queue sums.
        self.total_queues = frozenset(queues)
        self.total = np.zeros_like(table.idle)
        self.total_count = np.zeros(len(table), dtype=np.int64)
        # Per column: room for float rounding of the running sums (they are built in another
        # order than victims_fit's); far below any request.
        scale = (np.abs(table.allocatable).max(axis=0, initial=0.0)
                 + np.abs(table.used).max(axis=0, initial=0.0))
        self.slack = scale * SLACK_REL + SLACK_ABS
        # job uid -> task uids whose status changed (None: look at every task of the job)
        self.dirty: dict[str, set[str] | None] = dict.fromkeys(self.tasks)
        self.active = True
        # Session events seen (any placement, eviction or undo); a failed try is remembered
        # with this count: the same try on an unchanged session fails again.
        self.events = 0
        self._failed: dict[tuple, int] = {}
        self._keys: dict[str, tuple] = {}
        self._keys_at = 0
        ssn.add_event_handler(EventHandler(allocate_func=self._touch, deallocate_func=self._touch))

    @property
    def enabled(self) -> bool:
        """False when the plugins offer no bound (callers fall back to the fixed capacity)."""
        return self.filters is not None

    def close(self) -> None:
        """Stop tracking events (the action is over)."""
        self.active = False

    def _touch(self, ev: Event) -> None:
        if not self.active:
            return
        self.events += 1
        uid = ev.task.job_uid
        if uid in self.tasks:
            touched = self.dirty.get(uid, set())
            if touched is not None:
                touched.add(ev.task.uid)
                self.dirty[uid] = touched

    def job_keys(self) -> dict[str, tuple]:
        """A cache for job sort keys, emptied whenever the session changed."""
        if self._keys_at != self.events:
            self._keys.clear()
            self._keys_at = self.events
        return self._keys

    def failed_before(self, key: tuple) -> bool:
        """The try `key` (e.g. mode, job, task sched_key) failed and nothing happened since."""
        return self._failed.get(key) == self.events

    def remember_failure(self, key: tuple) -> None:
        """Record that the try `key` got nothing on the current session state (call it only
        when the try itself changed nothing: no event since it started)."""
        self._failed[key] = self.events

    def refresh(self) -> None:
        """Bring the sums up to date with the jobs and tasks that changed since the last look."""
        if not self.dirty:
            return
        jobs = self.ssn.jobs
        filters = self.filters or ()
        # queue -> (rows, vectors, +1/-1): contributions that left and that came
        delta: dict[str, tuple[list[int], list[np.ndarray], list[int]]] = {}
        for uid, touched in self.dirty.items():
            job = jobs[uid]
            entries = self.tasks[uid]
            ok = all(f(job) for f in filters)
            was = uid in self.eligible
            added = self.added.setdefault(uid, set())
            if ok != was or touched is None:
                look = entries.keys()  # eligibility flipped (or first look): every task
            else:
                look = touched if ok else ()
            if ok:
                self.eligible.add(uid)
            else:
                self.eligible.discard(uid)
            rows, vecs, signs = delta.setdefault(job.queue, ([], [], []))
            for tuid in look:
                entry = entries.get(tuid)
                if entry is None:
                    continue
                want = ok and entry[0].status is TaskStatus.RUNNING
                if want and tuid not in added:
                    added.add(tuid)
                    rows.append(entry[1])
                    vecs.append(entry[2])
                    signs.append(1)
                elif not want and tuid in added:
                    added.discard(tuid)
                    rows.append(entry[1])
                    vecs.append(-entry[2])
                    signs.append(-1)
        self.dirty.clear()
        for queue, (rows, vecs, signs) in delta.items():
            self._apply(queue, rows, vecs, signs)

    def _apply(self, queue: str, rows: list[int], vecs: list[np.ndarray], signs: list[int]) -> None:
        if not rows:
            return
        cap = self.cap.get(queue)
        if cap is None:
            cap = self.cap[queue] = np.zeros_like(self.total)
            self.count[queue] = np.zeros_like(self.total_count)
        count, in_total = self.count[queue], queue in self.total_queues
        if len(rows) <= 8:  # a few rows: plain row updates beat building arrays
            for row, vec, sign in zip(rows, vecs, signs, strict=True):
                cap[row] += vec
                count[row] += sign
                if in_total:
                    self.total[row] += vec
                    self.total_count[row] += sign
            return
        idx, mat, sgn = np.array(rows), np.array(vecs), np.array(signs)
        np.add.at(cap, idx, mat)
        np.add.at(count, idx, sgn)
        if in_total:
            np.add.at(self.total, idx, mat)
            np.add.at(self.total_count, idx, sgn)

    def fit_rows(self, task: TaskInfo, queue: str | None = None, without_job: str | None = None,
                 without_queue: str | None = None) -> np.ndarray:
        """Rows where future idle plus the bound could fit the task: the bound of `queue`'s
        candidates outside `without_job` (preempt), or of the tracked queues other than
        `without_queue` (reclaim). Rows without any such candidate are never in."""
        self.refresh()
        table = self.ssn.node_table
        if lacks_scalar(table, task):
            return np.zeros(len(table), dtype=bool)
        vec = table.vector(task.resreq)
        minus: list[tuple[int, np.ndarray]] = []
        if queue is not None:
            cap = self.cap.get(queue)
            if cap is None:
                return np.zeros(len(table), dtype=bool)
            count, other = self.count[queue], None
            entries = self.tasks.get(without_job or "", {})
            minus = [entries[t][1:] for t in self.added.get(without_job or "", ())]
            if minus:
                count = count.copy()
                for row, _ in minus:
                    count[row] -= 1
        else:
            cap, count, other = self.total, self.total_count, self.cap.get(without_queue or "")
            if other is not None and without_queue in self.total_queues:
                count = count - self.count[without_queue or ""]
            else:
                other = None
        ok = count > 0
        ok &= table.future_pods + count >= 1  # each candidate gives back its pod slot
        for c in needed_columns(vec):
            # Columns are contiguous (Fortran-ordered tables): one pass per needed column.
            bound = cap[:, c] if other is None and not minus else cap[:, c] - (
                other[:, c] if other is not None else 0.0)
            for row, v in minus:
                bound[row] -= v[c]
            ok &= (table.future[:, c] + bound) > vec[c] - MIN_RESOURCE - self.slack[c]
        return ok

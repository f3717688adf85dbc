"""Victim bookkeeping shared by preempt and reclaim.

`VictimIndex` lists, once per action, the running tasks that may ever be victims (Running,
non-empty request, preemptable task and job) per node row, and sums their requests per queue
as numpy arrays. A preemptor then only looks at rows where `future_idle + candidate
resources` could fit it, never at every task of the cluster. The sums are not lowered on
eviction: an evicted victim moves into the node's releasing (hence future idle), so the
filter only gets looser, never wrong.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.model import TaskStatus
from scheduler_core.resources import MIN_RESOURCE

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo


def _need(table: NodeTable, vec: np.ndarray) -> np.ndarray:
    # Columns the request actually asks for; other columns never block a victim plan.
    return np.nonzero(vec >= MIN_RESOURCE)[0]


def _lacks_scalar(table: NodeTable, task: TaskInfo) -> bool:
    # A scalar no node has can never be freed by evicting anything.
    return any(v >= MIN_RESOURCE and name not in table.dim_index for name, v in task.resreq.scalars.items())


class VictimIndex:
    """Possible victims per node row and their summed requests per queue."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        table = ssn.node_table
        self.by_row: list[list[TaskInfo]] = [[] for _ in range(len(table))]
        self.cap: dict[str, np.ndarray] = {}
        for job in ssn.jobs.values():
            if not job.preemptable:
                continue
            for task in job.tasks_in(TaskStatus.RUNNING):
                if task.best_effort or not task.preemptable or task.node_name not in table.index:
                    continue
                row = table.index[task.node_name]
                self.by_row[row].append(task)
                cap = self.cap.get(job.queue)
                if cap is None:
                    cap = self.cap[job.queue] = np.zeros_like(table.idle)
                cap[row] += table.vector(task.resreq)
        for tasks in self.by_row:
            tasks.sort(key=lambda t: t.uid)

    def running_on(self, row: int) -> list[TaskInfo]:
        """Candidates on the row that are still Running (evicted ones drop out)."""
        return [t for t in self.by_row[row] if t.status is TaskStatus.RUNNING]

    def capacity(self, queues: Iterable[str]) -> np.ndarray:
        """Summed candidate requests of the given queues per row."""
        total = np.zeros_like(self.ssn.node_table.idle)
        for q in queues:
            cap = self.cap.get(q)
            if cap is not None:
                total += cap
        return total

    def job_capacity(self, job_uid: str) -> np.ndarray | None:
        """Summed candidate requests of one job's tasks per row (None when it has none)."""
        table = self.ssn.node_table
        job = self.ssn.jobs[job_uid]
        total = None
        for task in job.tasks_in(TaskStatus.RUNNING):
            row = table.index.get(task.node_name or "")
            if row is None or task not in self.by_row[row]:
                continue
            if total is None:
                total = np.zeros_like(table.idle)
            total[row] += table.vector(task.resreq)
        return total

    def promising_rows(self, task: TaskInfo, ok: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Rows passing `ok` where future idle plus the candidates could fit the task."""
        table = self.ssn.node_table
        if _lacks_scalar(table, task):
            return np.zeros(len(table), dtype=bool)
        vec = table.vector(task.resreq)
        cols = _need(table, vec)
        avail = table.future[:, cols] + capacity[:, cols]
        return ok & ((vec[cols] - avail) < MIN_RESOURCE).all(axis=1)


def victims_fit(ssn: Session, task: TaskInfo, row: int, victims: list[TaskInfo]) -> bool:
    """Volcano's ValidateVictims: some victims, and future idle plus all of them fits the task."""
    if not victims:
        return False
    table = ssn.node_table
    if _lacks_scalar(table, task):
        return False
    avail = table.future[row].copy()
    for v in victims:
        avail += table.vector(v.resreq)
    vec = table.vector(task.resreq)
    cols = _need(table, vec)
    return bool(((vec[cols] - avail[cols]) < MIN_RESOURCE).all())


def victim_order(ssn: Session, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    """Volcano's BuildVictimsPriorityQueue: who is evicted first.

    Same job: reverse task order (lowest priority first). Different queues: victim queue
    order. Otherwise: reverse job order.
    """
    pq = ssn.queues[ssn.jobs[preemptor.job_uid].queue]

    def cmp(lv: TaskInfo, rv: TaskInfo) -> int:
        """<0 when lv is evicted before rv."""
        if lv.job_uid == rv.job_uid:
            return -ssn.task_compare(lv, rv)
        lj, rj = ssn.jobs[lv.job_uid], ssn.jobs[rv.job_uid]
        if lj.queue != rj.queue:
            return ssn.victim_queue_compare(ssn.queues[lj.queue], ssn.queues[rj.queue], pq)
        return -ssn.job_compare(lj, rj)

    return sorted(victims, key=cmp_to_key(cmp))


def rows_by_score(ssn: Session, task: TaskInfo, rows: np.ndarray) -> list[int]:
    """Candidate rows, best score first, ties to the lowest row (name first)."""
    idx = np.nonzero(rows)[0]
    if len(idx) <= 1:
        return [int(i) for i in idx]
    scores = ssn.node_scores(task, rows)[idx]
    order = np.lexsort((idx, -scores))
    return [int(i) for i in idx[order]]

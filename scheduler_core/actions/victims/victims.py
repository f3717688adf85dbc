"""Victim bookkeeping shared by preempt and reclaim.

`VictimIndex` lists, once per action, the running tasks that may ever be victims (Running,
preemptable task and job; best-effort ones too: they free a pod slot) per node row, and sums
their requests per queue
as numpy arrays. A preemptor then only looks at rows where `future_idle + candidate
resources` could fit it, never at every task of the cluster. The sums are not lowered on
eviction: an evicted victim moves into the node's releasing (hence future idle), so the
filter only gets looser, never wrong.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.framework.task_fallback import sort_tasks
from scheduler_core.model import TaskStatus
from scheduler_core.resources import MIN_RESOURCE

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo, TaskInfo


def needed_columns(vec: np.ndarray) -> np.ndarray:
    """Columns the request actually asks for; other columns never block a victim plan."""
    return np.nonzero(vec >= MIN_RESOURCE)[0]


def lacks_scalar(table: NodeTable, task: TaskInfo) -> bool:
    """The task asks for a scalar no node has: evicting anything can never free it."""
    return any(v >= MIN_RESOURCE and name not in table.dim_index for name, v in task.resreq.scalars.items())


class VictimIndex:
    """Possible victims per node row and their summed requests per queue."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        table = ssn.node_table
        self.by_row: list[list[TaskInfo]] = [[] for _ in range(len(table))]
        # Request vector of each candidate; rows and vectors per queue (summed on first use).
        self.vec: dict[str, np.ndarray] = {}
        self._parts: dict[str, tuple[list[int], list[np.ndarray]]] = {}
        self._cap: dict[str, np.ndarray] = {}
        # Small int per task equivalence class (`sched_key` is rebuilt on every read).
        self._klass: dict[str, int] = {}
        self._classes: dict[tuple, int] = {}
        self._ranks: dict[str, dict[str, int] | None] = {}
        index, vector = table.index, table.vector
        for job in ssn.own_jobs.values():  # another scheduler's tasks are never our victims
            if not job.preemptable:
                continue
            rows, vecs = self._parts.setdefault(job.queue, ([], []))
            for task in job.tasks_in(TaskStatus.RUNNING):
                if not task.preemptable or task.node_name not in index:
                    continue
                row = index[task.node_name]
                self.by_row[row].append(task)
                vec = self.vec[task.uid] = vector(task.resreq)
                rows.append(row)
                vecs.append(vec)
        for tasks in self.by_row:
            tasks.sort(key=lambda t: t.uid)

    @property
    def cap(self) -> dict[str, np.ndarray]:
        """Summed candidate requests per queue and row (queues without candidates absent)."""
        for q, (rows, vecs) in self._parts.items():
            if q not in self._cap and rows:
                self._cap[q] = self._queue_cap(rows, vecs)
        return self._cap

    def _queue_cap(self, rows: list[int], vecs: list[np.ndarray]) -> np.ndarray:
        cap = np.zeros_like(self.ssn.node_table.idle)
        np.add.at(cap, np.array(rows), np.array(vecs))  # in list order, as a plain loop would
        return cap

    def job_ranks(self, job_uid: str) -> dict[str, int] | None:
        """Reverse-task-order helper: the job's candidates ranked by the session fallback
        (`task_fallback`) when they all share one equivalence class, else None."""
        hit = self._ranks.get(job_uid, False)
        if hit is not False:
            return hit
        tasks = [t for t in self.ssn.jobs[job_uid].tasks.values() if t.uid in self.vec]
        first = self.class_of(tasks[0]) if tasks else -1
        if all(self.class_of(t) == first for t in tasks):
            sort_tasks(tasks)
            hit = {t.uid: i for i, t in enumerate(tasks)}
        else:
            hit = None
        self._ranks[job_uid] = hit
        return hit

    def class_of(self, task: TaskInfo) -> int:
        """A small int naming the task's equivalence class (same sched_key, same int)."""
        k = self._klass.get(task.uid)
        if k is None:
            k = self._klass[task.uid] = self._classes.setdefault(task.sched_key, len(self._classes))
        return k

    def running_on(self, row: int) -> list[TaskInfo]:
        """Candidates on the row that are still Running (evicted ones drop out)."""
        return [t for t in self.by_row[row] if t.status is TaskStatus.RUNNING]

    def capacity(self, queues: Iterable[str]) -> np.ndarray:
        """Summed candidate requests of the given queues per row."""
        total = np.zeros_like(self.ssn.node_table.idle)
        caps = self.cap
        for q in queues:
            cap = caps.get(q)
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
        return ok & self.fit_rows(task, capacity)

    def fit_rows(self, task: TaskInfo, capacity: np.ndarray) -> np.ndarray:
        """Rows where future idle plus `capacity` could fit the task (predicates not asked)."""
        table = self.ssn.node_table
        if lacks_scalar(table, task):
            return np.zeros(len(table), dtype=bool)
        vec = table.vector(task.resreq)
        cols = needed_columns(vec)
        avail = table.future[:, cols] + capacity[:, cols]
        return ((vec[cols] - avail) < MIN_RESOURCE).all(axis=1)


def victims_fit(ssn: Session, task: TaskInfo, row: int, victims: list[TaskInfo],
                index: VictimIndex | None = None) -> bool:
    """Volcano's ValidateVictims: some victims, and future idle plus all of them fits the task,
    one pod slot included (each victim gives its slot back).

    `index` (whose candidates the victims are) supplies their request vectors.
    """
    if not victims:
        return False
    table = ssn.node_table
    if lacks_scalar(table, task) or table.future_pods[row] + len(victims) < 1:
        return False
    avail = table.future[row].copy()
    vectors = index.vec if index is not None else {}
    for v in victims:
        vec = vectors.get(v.uid)
        avail += table.vector(v.resreq) if vec is None else vec
    vec = table.vector(task.resreq)
    cols = needed_columns(vec)
    return bool(((vec[cols] - avail[cols]) < MIN_RESOURCE).all())


def allowed_victims(ssn: Session, task: TaskInfo, row: int, candidates: list[TaskInfo], index: VictimIndex,
                    job_keys: Callable[[], dict[str, tuple]],
                    ask: Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]) -> list[TaskInfo] | None:
    """One node's try in preempt and reclaim: the victims the plugins allow, in victim order,
    when evicting all of them lets `task` fit on `row`; None otherwise.

    The candidates are offered in victim order (Volcano: node map order), so plugins with a budget
    (proportion's deserved, gang's min_member) spend it on the tasks evicted first. `ask` is the
    session's combiner (ssn.preemptable or ssn.reclaimable); `job_keys` returns the caller's
    cache of job sort keys for the current session state.
    """
    offered = victim_order(ssn, task, candidates, index, job_keys())
    victims = ask(task, offered)
    if not victims_fit(ssn, task, row, victims, index):
        return None
    if not in_order_of(victims, offered):  # plugins answer in offer order, as a rule
        victims = victim_order(ssn, task, victims, index, job_keys())
    return victims


def released_by(ssn: Session, victims: list[TaskInfo], index: VictimIndex) -> np.ndarray:
    """Summed request vector of the victims (what evicting all of them releases)."""
    table = ssn.node_table
    total = np.zeros(len(table.dims))
    vectors = index.vec
    for v in victims:
        vec = vectors.get(v.uid)
        total += table.vector(v.resreq) if vec is None else vec
    return total


def victim_order(ssn: Session, preemptor: TaskInfo, victims: list[TaskInfo],
                 index: VictimIndex | None = None, job_keys: dict[str, tuple] | None = None,
                 ) -> list[TaskInfo]:
    """Volcano's BuildVictimsPriorityQueue: who is evicted first.

    Different queues: victim queue order. Same queue, different jobs: the plugins' job order
    alone, reversed (no creation-time or uid fallback); jobs it cannot tell apart, and tasks
    of one job, come in reverse task order (lowest priority first, then the reverse of the
    task fallback: highest name index, latest, greatest uid). That is a lexicographic order
    (queue, plugin job key reversed, task reversed), built here from sorted groups; the
    pairwise comparator is kept for plugins without a job sort key. `index` (the victims'
    VictimIndex) and `job_keys` (a cache of plugin job keys for the current session state,
    which the caller empties on any change) only save work.
    """
    if len(victims) <= 1:
        return list(victims)
    job_key = plugin_job_key(ssn)
    if job_key is None:
        return _victim_order_cmp(ssn, preemptor, victims)
    jobs = ssn.jobs
    by_job: dict[str, list[TaskInfo]] = {}
    for v in victims:
        by_job.setdefault(v.job_uid, []).append(v)
    keys = job_keys if job_keys is not None else {}
    # queue -> plugin job key -> jobs with that key
    by_queue: dict[str, dict[tuple, list[str]]] = {}
    for uid in by_job:
        key = keys.get(uid)
        if key is None:
            key = keys[uid] = job_key(jobs[uid])
        by_queue.setdefault(jobs[uid].queue, {}).setdefault(key, []).append(uid)
    queue_names = list(by_queue)
    if len(queue_names) > 1:
        pq = ssn.queues[jobs[preemptor.job_uid].queue]
        queues = ssn.queues
        queue_names.sort(key=cmp_to_key(
            lambda a, b: victim_queue_compare(ssn, queues[a], queues[b], pq)))
    out: list[TaskInfo] = []
    for q in queue_names:
        groups = by_queue[q]
        for key in sorted(groups, reverse=True):
            uids = groups[key]
            tasks = by_job[uids[0]] if len(uids) == 1 else [t for uid in uids for t in by_job[uid]]
            if len(tasks) > 1:
                _reverse_task_order(ssn, tasks, index)
            out.extend(tasks)
    return out


def plugin_job_key(ssn: Session) -> Callable[[JobInfo], tuple] | None:
    """A sort key agreeing with the enabled job-order plugins alone (no creation-time or uid
    tail), or None when one of them has no key."""
    fns = []
    for tier in ssn.enabled_fns("job_order"):
        for name, _ in tier:
            fn = ssn.companion("job_order", name, "key_fn")
            if fn is None:
                return None
            fns.append(fn)
    return lambda job: tuple(fn(job) for fn in fns)


def plugin_job_compare(ssn: Session, lhs: JobInfo, rhs: JobInfo) -> int:
    """The first non-zero answer of the enabled job-order plugins (0: they tie)."""
    for tier in ssn.enabled_fns("job_order"):
        for _, fn in tier:
            j = fn(lhs, rhs)
            if j != 0:
                return j
    return 0


def victim_queue_compare(ssn: Session, lhs: QueueInfo, rhs: QueueInfo, preemptor_queue: QueueInfo) -> int:
    """<0 when victims are taken from queue lhs first: the session's combiner
    (`CallbackRegistry.victim_queue_compare`: plugins, else the reverse of the queue order)."""
    return ssn.victim_queue_compare(lhs, rhs, preemptor_queue)


def _reverse_task_order(ssn: Session, tasks: list[TaskInfo], index: VictimIndex | None) -> None:
    """Sort one job's tasks in reverse session task order, in place.

    Tasks with the same `sched_key` have the same priority, so task-order plugins cannot
    tell them apart (as in `TaskList`): one class sorts by the session fallback alone.
    task_compare is strict (uid fallback), so a reversed sort is exactly the reverse order.
    """
    if index is not None:
        ranks = index.job_ranks(tasks[0].job_uid)
        if ranks is not None and all(t.uid in ranks for t in tasks):
            tasks.sort(key=lambda t: ranks[t.uid], reverse=True)
            return
        first = index.class_of(tasks[0])
        same = all(index.class_of(t) == first for t in tasks)
    else:
        first_key = tasks[0].sched_key
        same = all(t.sched_key == first_key for t in tasks)
    if same:
        sort_tasks(tasks, reverse=True)
    else:
        tasks.sort(key=cmp_to_key(ssn.task_compare), reverse=True)


def in_order_of(subset: list[TaskInfo], ordered: list[TaskInfo]) -> bool:
    """`subset` is a subsequence of `ordered` (then, the order being strict, already sorted)."""
    it = iter(ordered)
    return all(any(t is o for o in it) for t in subset)


def _victim_order_cmp(ssn: Session, preemptor: TaskInfo, victims: list[TaskInfo]) -> list[TaskInfo]:
    """victim_order through the pairwise comparators (any plugin set)."""
    pq = ssn.queues[ssn.jobs[preemptor.job_uid].queue]

    def cmp(lv: TaskInfo, rv: TaskInfo) -> int:
        """<0 when lv is evicted before rv."""
        if lv.job_uid != rv.job_uid:
            lj, rj = ssn.jobs[lv.job_uid], ssn.jobs[rv.job_uid]
            if lj.queue != rj.queue:
                return victim_queue_compare(ssn, ssn.queues[lj.queue], ssn.queues[rj.queue], pq)
            j = plugin_job_compare(ssn, lj, rj)
            if j != 0:
                return -j
        return -ssn.task_compare(lv, rv)

    return sorted(victims, key=cmp_to_key(cmp))


def rows_by_score(ssn: Session, task: TaskInfo, rows: np.ndarray, action: str = "preempt") -> list[int]:
    """Candidate rows, best score first, ties to the lowest row (name first); under soft
    sharding the shard's rows come first (framework.sharding).

    When the session records scores, the order and each row's scores are recorded for the
    task as `action`'s try (every row is kept until the task's node is known).
    """
    idx = np.nonzero(rows)[0]
    recorder = ssn.score_recorder
    if len(idx) <= 1:
        if recorder is not None:
            recorder.record_mask(task, action, rows, keep_all=True, pipelined=True)
        return [int(i) for i in idx]
    shard = ssn.shard
    if shard.soft:  # soft sharding: the shard's rows first, each group scored alone
        all_scores = np.zeros(len(rows))
        for group in shard.split(rows):
            if group.any():
                all_scores[group] = ssn.node_scores(task, group)[group]
    else:
        all_scores = ssn.node_scores(task, rows)
    if recorder is not None:
        recorder.record_mask(task, action, rows, all_scores, keep_all=True, pipelined=True)
    scores = all_scores[idx]
    if shard.soft:
        order = np.lexsort((idx, -scores, ~shard.in_shard[idx]))
    else:
        order = np.lexsort((idx, -scores))
    return [int(i) for i in idx[order]]

"""The job table's counts behind /metrics, kept by the rendering process and brought up to date
from the rows changed since its last render (PostgreSQL; schedweb.scheduling.metrics_feed).

Three things in the body are counts over every job and waiting task: pod groups by queue and
phase, waiting jobs by reason code, and the newest waiting jobs with their unscheduled tasks.
Counting them afresh costs a scan of the job table and of every waiting task at each render
(most of its time at thousands of nodes). Instead `JobCounts` keeps, per job row, its queue,
phase, reason code and (while it may wait) its creation and name, and per waiting task (Pending
or Pipelined) its job; each render re-reads only the job, task and queue rows the change log
names since the previous one (anyone's writes: the cycle's, the API's, the agent's) and moves
the counts by the difference. A re-read row replaces what was kept of it, so reading a row twice
is harmless. The counts are exactly what the queries give over the tables at the read.

Counted afresh (`JobCounts.base`) when there is no base yet, on doubt about the log (see
metrics_feed), inside a transaction (a render there sees writes that may roll back: nothing is
kept from it) and every `recount_every()`-th render (setting METRICS_RECOUNT_EVERY, default
1,000; 0 = never): a safety net that logs when the kept counts had drifted from the tables (a
write the log missed).

A render re-reads at most three statements' worth: the named job ids and whether a queue moved,
those jobs by id, and the named tasks with those of them now waiting (one row of arrays); the
queues again only when one changed. At the L benchmark a steady cycle names about 4,000 tasks
and 600 jobs.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from schedweb.core.models import TERMINAL_JOB_PHASES, TaskStatus
from schedweb.scheduling import metrics_feed
from schedweb.scheduling.metrics_feed import Position
from schedweb.scheduling.metrics_unscheduled import Key, newest

logger = logging.getLogger(__name__)

RECOUNT_EVERY_DEFAULT = 1000
_TERMINAL = frozenset(str(phase) for phase in TERMINAL_JOB_PHASES)
WAITING = (str(TaskStatus.PENDING), str(TaskStatus.PIPELINED))  # the unscheduled tasks' statuses

# A job's creation in microseconds since the epoch (exact: extract's answer is numeric).
CREATED_US = "(extract(epoch FROM {t}created) * 1000000)::bigint"
JOBS_SQL = (f"SELECT id, queue_id, phase, reason_code, {CREATED_US.format(t='')}, namespace, name "
            "FROM core_job")
TASKS_SQL = "SELECT id, job_id FROM core_task WHERE status = ANY(%s)"
QUEUES_SQL = "SELECT id, name FROM core_queue ORDER BY name"
# The jobs the log names and whether a queue changed (then the jobs by id: an index scan; a
# join to the log's rows probing them one by one costs a few times more).
CHANGED_JOBS_SQL = (
    "SELECT coalesce(array_agg(DISTINCT row_id) FILTER (WHERE tbl = 'core_job'), '{{}}'), "
    "coalesce(bool_or(tbl = 'core_queue'), false) FROM scheduling_change "
    "WHERE tbl IN ('core_job', 'core_queue') AND {window}")
# The tasks in one row: the ids the log names, and those of them waiting now with their jobs.
CHANGED_TASKS_SQL = (
    "WITH c AS (SELECT array_agg(DISTINCT row_id) AS ids FROM scheduling_change "
    "WHERE tbl = 'core_task' AND {window}) "
    "SELECT coalesce(c.ids, '{{}}'), coalesce(w.ids, '{{}}'), coalesce(w.jobs, '{{}}') FROM c, LATERAL "
    "(SELECT array_agg(t.id) AS ids, array_agg(t.job_id) AS jobs FROM core_task t "
    "WHERE t.id = ANY(c.ids) AND t.status = ANY(%s)) w")


def recount_every() -> int:
    """Renders between two counts from scratch (setting METRICS_RECOUNT_EVERY; 0 = never)."""
    return max(0, int(getattr(settings, "METRICS_RECOUNT_EVERY", RECOUNT_EVERY_DEFAULT)))


@dataclass(frozen=True, slots=True)
class JobRecord:
    """What the counts need of one job row; `key` only while it may wait (not finished, with
    a reason code): its place among the newest waiting jobs."""

    queue_id: int
    phase: str
    code: str
    key: Key | None


def _record(row: tuple) -> JobRecord:
    pk, queue_id, phase, code, created_us, namespace, name = row
    waits = bool(code) and phase not in _TERMINAL
    key = (-created_us, namespace, name, pk) if waits else None
    return JobRecord(queue_id, phase, code, key)


@dataclass
class JobCounts:
    """The counts (see the module docstring) as of `position` in the change log."""

    position: Position
    queues: list[tuple[int, str]]  # (id, name), in the database's order of names
    jobs: dict[int, JobRecord] = field(default_factory=dict)
    groups: dict[tuple[int, str], int] = field(default_factory=dict)  # (queue id, phase) -> jobs
    codes: dict[str, int] = field(default_factory=dict)  # waiting jobs by reason code
    task_job: dict[int, int] = field(default_factory=dict)  # waiting task -> its job
    waiting: dict[int, int] = field(default_factory=dict)  # job -> its waiting tasks
    eligible: dict[int, Key] = field(default_factory=dict)  # waiting jobs with waiting tasks
    order: list[Key] = field(default_factory=list)  # their keys, sorted: the newest first
    dirty: set[tuple[int, str]] = field(default_factory=set)  # groups moved since `take_dirty`
    renders: int = 0

    @classmethod
    def base(cls, position: Position) -> JobCounts:
        """Everything counted from the tables (read after `position` was taken)."""
        with connection.cursor() as cursor:
            cursor.execute(QUEUES_SQL)
            counts = cls(position, list(cursor.fetchall()))
            cursor.execute(JOBS_SQL)
            for row in cursor.fetchall():
                counts._put_job(row[0], _record(row))
            cursor.execute(TASKS_SQL, [list(WAITING)])
            for task, job in cursor.fetchall():
                counts.task_job[task] = job
                counts.waiting[job] = counts.waiting.get(job, 0) + 1
        for pk, record in counts.jobs.items():
            if record.key is not None and counts.waiting.get(pk):
                counts.eligible[pk] = record.key
        counts.order = sorted(counts.eligible.values())
        counts.dirty.clear()
        counts._check_queues(counts.groups)
        return counts

    def apply(self, window: tuple[str, list] | None, position: Position) -> None:
        """Re-read the rows logged in `window` (metrics_feed.window) and move the counts; now as
        of `position`."""
        if window is not None:
            where, params = window
            touched: set[int] = set()
            with connection.cursor() as cursor:
                cursor.execute(CHANGED_JOBS_SQL.format(window=where), params)
                named, queues = cursor.fetchone()
                rows: dict[int, JobRecord] = {}
                if named:
                    cursor.execute(f"{JOBS_SQL} WHERE id = ANY(%s)", [named])
                    rows = {row[0]: _record(row) for row in cursor.fetchall()}
                for pk in named:
                    record = rows.get(pk)  # None: deleted
                    if record != self.jobs.get(pk):  # most re-read jobs moved only their message
                        self._drop_job(pk)
                        if record is not None:
                            self._put_job(pk, record)
                        touched.add(pk)
                if queues:
                    cursor.execute(QUEUES_SQL)
                    self.queues = list(cursor.fetchall())
                cursor.execute(CHANGED_TASKS_SQL.format(window=where), [*params, list(WAITING)])
                named, tasks, jobs = cursor.fetchone()
            move, waits = self._move_task, dict(zip(tasks, jobs, strict=True))
            for pk in self.task_job.keys() & set(named):  # waited: does it still (in the same job)?
                move(pk, waits.get(pk), touched)
            for pk, job in waits.items():
                move(pk, job, touched)
            for pk in touched:
                self._check_eligible(pk)
            self._check_queues(self.dirty)
        self.position = position

    def _check_queues(self, groups: Iterable[tuple[int, str]]) -> None:
        """Read the queues again when a job counted is in one they lack (a queue committed
        between the two reads: the next log read names it anyway)."""
        known = {pk for pk, _ in self.queues}
        if any(queue_id not in known for queue_id, _ in groups):
            with connection.cursor() as cursor:
                cursor.execute(QUEUES_SQL)
                self.queues = list(cursor.fetchall())

    def _put_job(self, pk: int, record: JobRecord) -> None:
        self.jobs[pk] = record
        self._count(record, 1)

    def _drop_job(self, pk: int) -> None:
        record = self.jobs.pop(pk, None)
        if record is not None:
            self._count(record, -1)

    def _count(self, record: JobRecord, by: int) -> None:
        key = (record.queue_id, record.phase)
        _add(self.groups, key, by)
        self.dirty.add(key)
        if record.code and record.phase not in _TERMINAL:
            _add(self.codes, record.code, by)

    def _move_task(self, pk: int, job: int | None, touched: set[int]) -> None:
        """Task `pk` now waits in `job` (None: it waits no more, or is gone)."""
        before = self.task_job.get(pk)
        if before == job:
            return
        if before is not None:
            del self.task_job[pk]
            _add(self.waiting, before, -1)
            touched.add(before)
        if job is not None:
            self.task_job[pk] = job
            _add(self.waiting, job, 1)
            touched.add(job)

    def _check_eligible(self, pk: int) -> None:
        record = self.jobs.get(pk)
        key = record.key if record is not None and self.waiting.get(pk) else None
        before = self.eligible.get(pk)
        if before == key:
            return
        if before is not None:
            del self.order[bisect_left(self.order, before)]
            del self.eligible[pk]
        if key is not None:
            insort(self.order, key)
            self.eligible[pk] = key

    # -- what the render reads ----------------------------------------------------------------------
    def take_dirty(self) -> set[tuple[int, str]]:
        """The (queue id, phase) groups moved since the last call."""
        out, self.dirty = self.dirty, set()
        return out

    def unscheduled(self, limit: int) -> list[tuple[str, str, int]]:
        """(namespace, name, waiting tasks) of the `limit` newest waiting jobs with tasks to place,
        sorted: what metrics.UNSCHEDULED_SQL gives, sorted."""
        waiting = self.waiting
        return sorted((key[1], key[2], waiting[key[3]]) for key in newest(self.order, limit))

    def same_as(self, other: JobCounts) -> bool:
        """Whether both hold the same counts (the periodic recount's check)."""
        return (self.groups == other.groups and self.codes == other.codes and self.waiting == other.waiting
                and self.order == other.order and self.queues == other.queues)


def _add(counts: dict, key: object, by: int) -> None:
    n = counts.get(key, 0) + by
    if n:
        counts[key] = n
    else:
        counts.pop(key, None)


_kept: list[JobCounts] = []  # this process's counts (at most one)
_NO_POSITION = Position("", 0, (), 0, "", 0)


def current() -> JobCounts:
    """The counts as of now: the kept ones brought up to date, or counted afresh (see the module
    docstring). Inside a transaction the answer is not kept."""
    position = metrics_feed.head()
    if position is None or connection.in_atomic_block:
        return JobCounts.base(position or _NO_POSITION)
    kept = _kept[0] if _kept else None
    if kept is not None and metrics_feed.trusted(kept.position, position):
        kept.apply(metrics_feed.window(kept.position, position), position)
        kept.renders += 1
        every = recount_every()
        if not every or kept.renders % every:
            return kept
        return _recount(kept, position)
    _kept[:] = [fresh := JobCounts.base(position)]
    return fresh


def _recount(kept: JobCounts, position: Position) -> JobCounts:
    """The periodic count from scratch, compared with the kept one when nothing was written
    meanwhile (a difference means the log missed a write: logged)."""
    _kept[:] = [fresh := JobCounts.base(position)]
    after = metrics_feed.head()
    quiet = after is not None and after.newest == position.newest and not (after.running or position.running)
    if quiet and not fresh.same_as(kept):
        logger.warning("metrics: the kept job counts differed from the tables; counted again")
    return fresh


def forget() -> None:
    """Drop the kept counts (the next render counts afresh)."""
    _kept.clear()

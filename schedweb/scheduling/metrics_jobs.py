"""Volcano's per-job gauges: `volcano_job_share`, `volcano_e2e_job_scheduling_{duration,start_time,
last_time}`.

Upstream keeps them in the scheduler's process and deletes a job's series with the job; here the
cycle's process keeps them the same way and the body /metrics serves is rendered after each
cycle, so a finished or deleted job's series goes with the next cycle. Per job not finished in
the newest successful cycle's snapshot:

- `volcano_job_share{job_ns, job_id}`: the dominant share the drf plugin reported at the
  session's close (`SessionResult.job_gauges["job_share"]`; absent without drf). `job_id` is the
  job's name, as upstream (`UpdateJobShare(job.Namespace, job.Name, share)`).
- `volcano_e2e_job_scheduling_start_time{job_name, queue, job_namespace}`: unix seconds of the
  first cycle of this process whose session had the job (Volcano's ScheduleStartTimestamp).
- `..._last_time`: unix seconds of the last cycle that bound tasks of the job (written binds);
  `..._duration`: milliseconds from the job's creation to that cycle. Both only once a cycle of
  this process bound some of its tasks, as upstream sets them when a job gets its allocation.

Like upstream's, they live in the scheduler's memory: a restarted scheduler starts them again,
and a live render in another process (a stale body, METRICS_PRERENDER off) has the families
without samples. At most METRICS_JOB_SERIES_MAX jobs (default 2,000, the newest first by
creation) get series, so the render stays cheap with tens of thousands of jobs.

A cycle's record costs what changed: the jobs it follows are kept sorted by creation, and on a
kept snapshot (schedweb.scheduling.incremental) only the jobs its job table's change log names
(scheduler_core.job_log: added, removed, replaced, phase moved) are looked at again; a new
table (a full load), another view of the rows (a sharded instance's own jobs) or a break in
the log walks every job, as does every WALK_EVERY-th record (a check that logs a difference).
A job's creation time is taken as fixed for its row, as the kept snapshot takes it (the API
never writes it; delta keeps a job's place): one changed by hand in the database is seen when
the job is among the rows shown (then every job is walked at once), else at the next walk.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from prometheus_client.core import Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from scheduler_core.job_log import LogReader
from scheduler_core.model import JobInfo
from scheduler_core.result import SessionResult
from schedweb.scheduling.metrics_text import escape_label_value

logger = logging.getLogger(__name__)

SERIES_MAX_DEFAULT = 2000
WALK_EVERY = 1000  # records between two walks of every job (a check of the kept order)
SHARE = "job_share"  # SessionResult.job_gauges key (drf)
E2E_LABELS = ["job_name", "queue", "job_namespace"]


def series_max() -> int:
    """How many jobs get per-job series (setting METRICS_JOB_SERIES_MAX; 0: none)."""
    return max(0, int(getattr(settings, "METRICS_JOB_SERIES_MAX", SERIES_MAX_DEFAULT)))


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job's series values (None: not exported)."""

    namespace: str
    name: str
    queue: str
    share: float | None
    start_time: float
    last_time: float | None
    duration_ms: float | None


Key = tuple[float, str]  # (creation time, uid): a job's place, newest last


class JobSeries:
    """The per-job figures of this process's cycles: first and last scheduling times by job, and
    the rows of the newest successful cycle."""

    def __init__(self) -> None:
        # Keyed by (creation time, uid): a job deleted and submitted again under its name between
        # two cycles is another job, whose times start afresh (upstream keys by the object's UID).
        self.first: dict[Key, float] = {}
        self.last: dict[Key, float] = {}
        self.rows: list[JobRow] = []
        self.cycle_id: int | None = None  # the CycleRun the rows are of
        self.members: dict[str, Key] = {}  # the jobs followed, by uid
        self.order: list[Key] = []  # their keys, sorted
        self._reader = LogReader()
        self._context: object = None  # the `context` the members were judged in
        self._records = 0
        self._row_of: dict[Key, JobRow] = {}  # the rows of the last record, by job

    def record(self, cycle_id: int, jobs: Mapping[str, JobInfo], member: Callable[[str, JobInfo], bool],
               result: SessionResult, bound_jobs: Iterable[str], now: float, context: object = None) -> None:
        """A successful cycle at `now` (unix seconds): its id, its snapshot's jobs (`member` says
        which it still schedules), its result and the jobs whose tasks it bound (and wrote).
        `context`: what `member` reads besides the job (the loaded rows); while it is the same
        object and `jobs` the same logged table, only the jobs the table logged are judged again."""
        changed, log, pos = self._reader.changed(jobs)
        self._records += 1
        if context is not self._context:
            changed = None
        if changed is None or self._records % WALK_EVERY == 0:
            self._walk(jobs, member, now, check=changed is not None)
        else:
            for uid in changed:
                job = jobs.get(uid)
                self._judge(uid, (job.created, uid) if job is not None and member(uid, job) else None, now)
        self._reader.commit(log, pos)
        self._context = context
        bound = list(bound_jobs)
        self._stamp(bound, now)
        rows = self._rows(jobs, result)
        if rows is None:  # a job shown had its creation time changed by hand (no log entry): walk
            self._walk(jobs, member, now, check=False)
            self._stamp(bound, now)
            rows = self._rows(jobs, result) or []
        self.rows, self.cycle_id = rows, cycle_id

    def _stamp(self, bound: list[str], now: float) -> None:
        members, last = self.members, self.last
        for uid in bound:
            if (key := members.get(uid)) is not None:
                last[key] = now

    def _rows(self, jobs: Mapping[str, JobInfo], result: SessionResult) -> list[JobRow] | None:
        """The newest jobs' rows (None: one's key is stale)."""
        shares, first, last = result.job_gauges.get(SHARE, {}), self.first, self.last
        rows, n, before, now_rows = [], series_max(), self._row_of, {}
        for key in reversed(self.order[-n:]) if n else ():  # the newest first
            job, share, start, stamp = jobs[key[1]], shares.get(key[1]), first[key], last.get(key)
            if job.created != key[0]:
                return None
            row = before.get(key)
            # The row of the last record while its text holds (families_text reuses its lines).
            if row is None or not (row.start_time is start and row.last_time is stamp
                                   and row.queue == job.queue and _same_text(row.share, share)):
                duration = None
                if stamp is not None and job.created > 0:
                    duration = max(0.0, (stamp - job.created) * 1e3)
                row = JobRow(job.namespace, job.name, job.queue, share, start, stamp, duration)
            rows.append(row)
            now_rows[key] = row
        self._row_of = now_rows
        return rows

    def _judge(self, uid: str, key: Key | None, now: float) -> None:
        """Job `uid` is followed under `key` now (None: no longer)."""
        before = self.members.get(uid)
        if before == key:
            return
        if before is not None:  # gone (finished, deleted): forgotten, as upstream deletes it
            del self.order[bisect_left(self.order, before)]
            del self.members[uid], self.first[before]
            self.last.pop(before, None)
        if key is not None:
            insort(self.order, key)
            self.members[uid], self.first[key] = key, now

    def _walk(self, jobs: Mapping[str, JobInfo], member: Callable[[str, JobInfo], bool], now: float,
              check: bool) -> None:
        """Judge every job (the members found anew; kept times kept for jobs still followed);
        `check`: the kept members should have been right (warn when they were not)."""
        members = {uid: (job.created, uid) for uid, job in jobs.items() if member(uid, job)}
        if check and members != self.members:
            logger.warning("metrics: the per-job series followed other jobs than the snapshot's; walked")
        first = self.first
        self.first = {key: first.get(key, now) for key in members.values()}
        self.last = {key: t for key, t in self.last.items() if key in self.first}
        self.members, self.order = members, sorted(members.values())

    def rows_of(self, cycle_id: int | None) -> list[JobRow]:
        """The rows when they are of that cycle (the newest successful one), else none: another
        process ran it, or this one has not run a cycle since it started."""
        return self.rows if cycle_id is not None and cycle_id == self.cycle_id else []


SERIES = JobSeries()


def _same_text(a: float | None, b: float | None) -> bool:
    """Whether two values write the same text (equal, and a zero of the same sign)."""
    return a is b or (a == b and (a != 0 or str(a) == str(b)))


@lru_cache(maxsize=65536)
def _label_text(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    """`{a="x",b="y"}` with the names sorted, as prometheus_client writes labels."""
    pairs = sorted(zip(names, values, strict=True))
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in pairs) + "}"


# (family name, label names) -> (label values, value) -> the series' line, of the last render.
_LINES: dict[tuple[str, tuple[str, ...]], dict[tuple[tuple[str, ...], float], str]] = {}


class JobGaugeFamily(Metric):
    """A gauge with one series per job: its text written from label texts kept per job (a render
    of thousands of series costs a string per sample, not a regular expression per label);
    `samples` are built only when asked (prometheus_client's own writer, tests)."""

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        super().__init__(name, documentation, "gauge")
        self.label_names = tuple(labels)
        self.points: list[tuple[tuple[str, ...], float]] = []

    def add_metric(self, labels: list[str], value: float) -> None:
        """One job's series."""
        self.points.append((tuple(labels), float(value)))

    @property
    def samples(self) -> list[Sample]:  # type: ignore[override]
        """The series as prometheus_client's samples."""
        return [Sample(self.name, dict(zip(self.label_names, values, strict=True)), value)
                for values, value in self.points]

    @samples.setter
    def samples(self, _: list) -> None:
        pass  # Metric.__init__ sets an empty list: the points are the samples

    def sample_text(self) -> str:
        """Every series' line of the text format; a series whose value held since the last
        render of this family reuses its line (most jobs' times and shares hold)."""
        names, name = self.label_names, self.name
        before, now = _LINES.get((name, names), {}), {}
        out = []
        for point in self.points:
            line = before.get(point)
            if line is None:
                values, value = point
                line = f"{name}{_label_text(names, values)} {floatToGoString(value)}\n"
            if point[1] != 0.0:  # 0.0 == -0.0, whose text differs: zeros are not kept
                now[point] = line
            out.append(line)
        _LINES[(name, names)] = now  # only the current series: the memory is this render's
        return "".join(out)


def families(rows: list[JobRow]) -> Iterator[Metric]:
    """The four per-job families of these rows (SERIES.rows_of(the newest successful cycle))."""
    share = JobGaugeFamily("volcano_job_share", "Share for one job", labels=["job_ns", "job_id"])
    duration = JobGaugeFamily("volcano_e2e_job_scheduling_duration",
                              "E2E job scheduling duration (milliseconds, job created to its last binds)",
                              labels=E2E_LABELS)
    start = JobGaugeFamily("volcano_e2e_job_scheduling_start_time",
                           "E2E job scheduling start time (unix seconds)", labels=E2E_LABELS)
    last = JobGaugeFamily("volcano_e2e_job_scheduling_last_time",
                          "E2E job scheduling last time (unix seconds)", labels=E2E_LABELS)
    for row in rows:
        labels = [row.name, row.queue, row.namespace]
        if row.share is not None:
            share.add_metric([row.namespace, row.name], row.share)
        start.add_metric(labels, row.start_time)
        if row.last_time is not None:
            last.add_metric(labels, row.last_time)
        if row.duration_ms is not None:
            duration.add_metric(labels, row.duration_ms)
    yield from (share, duration, start, last)


# id(row) -> (the row, its line in each family of `families`, "" where it has none), of the last
# families_text: a row JobSeries.record reused is the same object, its text the same.
_ROW_LINES: list[dict[int, tuple[JobRow, tuple[str, str, str, str]]]] = [{}]


@lru_cache(maxsize=1)
def _headers() -> tuple[str, ...]:
    """The HELP and TYPE lines of each family of `families`, in its order."""
    from schedweb.scheduling.metrics_text import exposition

    return tuple(exposition([family]).decode("utf-8") for family in families([]))


def _row_lines(row: JobRow) -> tuple[str, str, str, str]:
    e2e = _label_text(("job_name", "queue", "job_namespace"), (row.name, row.queue, row.namespace))
    share = "" if row.share is None else (
        f"volcano_job_share{_label_text(('job_ns', 'job_id'), (row.namespace, row.name))} "
        f"{floatToGoString(row.share)}\n")
    duration = "" if row.duration_ms is None else (
        f"volcano_e2e_job_scheduling_duration{e2e} {floatToGoString(row.duration_ms)}\n")
    last = "" if row.last_time is None else (
        f"volcano_e2e_job_scheduling_last_time{e2e} {floatToGoString(row.last_time)}\n")
    start = f"volcano_e2e_job_scheduling_start_time{e2e} {floatToGoString(row.start_time)}\n"
    return share, duration, start, last


def families_text(rows: list[JobRow]) -> str:
    """exposition(families(rows)), written from lines kept per row (JobSeries.record hands the
    same row object while its values hold)."""
    before, now = _ROW_LINES[0], {}
    for row in rows:
        hit = before.get(id(row))
        if hit is None or hit[0] is not row:
            hit = (row, _row_lines(row))
        now[id(row)] = hit
    _ROW_LINES[0] = now
    lines = [hit[1] for hit in now.values()]
    return "".join(header + "".join(line[i] for line in lines) for i, header in enumerate(_headers()))

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
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from prometheus_client.core import Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from scheduler_core.model import JobInfo
from scheduler_core.result import SessionResult
from schedweb.scheduling.metrics_text import escape_label_value

SERIES_MAX_DEFAULT = 2000
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


class JobSeries:
    """The per-job figures of this process's cycles: first and last scheduling times by job, and
    the rows of the newest successful cycle."""

    def __init__(self) -> None:
        # Keyed by (uid, creation time): a job deleted and submitted again under its name between
        # two cycles is another job, whose times start afresh (upstream keys by the object's UID).
        self.first: dict[tuple[str, float], float] = {}
        self.last: dict[tuple[str, float], float] = {}
        self.rows: list[JobRow] = []
        self.cycle_id: int | None = None  # the CycleRun the rows are of

    def record(self, cycle_id: int, jobs: Iterable[JobInfo], result: SessionResult,
               bound_jobs: Iterable[str], now: float) -> None:
        """A successful cycle at `now` (unix seconds): its id, its snapshot's jobs still to
        schedule, its result and the jobs whose tasks it bound (and wrote)."""
        # One pass over the jobs (tens of thousands: no per-job lambda, no second dict of them).
        first, kept, bound, stamped = self.first, {}, set(bound_jobs), []
        live = list(jobs)
        for job in live:
            key = (job.uid, job.created)
            kept[key] = first.get(key, now)
            if job.uid in bound:
                stamped.append(key)
        # Jobs gone (finished, deleted) are forgotten, as upstream deletes them with the job.
        self.first = kept
        self.last = {key: t for key, t in self.last.items() if key in kept}
        for key in stamped:
            self.last[key] = now
        shares = result.job_gauges.get(SHARE, {})
        newest = heapq.nlargest(series_max(), live, key=_NEWEST)
        rows = []
        for job in newest:
            key = (job.uid, job.created)
            last = self.last.get(key)
            duration = max(0.0, (last - job.created) * 1e3) if last is not None and job.created > 0 else None
            rows.append(JobRow(job.namespace, job.name, job.queue, shares.get(job.uid),
                               kept[key], last, duration))
        self.rows, self.cycle_id = rows, cycle_id

    def rows_of(self, cycle_id: int | None) -> list[JobRow]:
        """The rows when they are of that cycle (the newest successful one), else none: another
        process ran it, or this one has not run a cycle since it started."""
        return self.rows if cycle_id is not None and cycle_id == self.cycle_id else []


SERIES = JobSeries()
_NEWEST = operator.attrgetter("created", "uid")  # newest first; the uid breaks ties


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

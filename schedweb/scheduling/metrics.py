"""Prometheus collector under upstream Volcano's metric names; a scrape costs the same whatever the history.

Queue gauges (pkg/scheduler/metrics/queue.go) come from the latest successful cycle's
QueueSample rows: `volcano_queue_{allocated,request,deserved,capacity,real_capacity,inqueue}_
{milli_cpu,memory_bytes}`, `..._scalar_resources{queue_name,resource}` for GPUs and any other
scalar (milli-units, as Volcano), `volcano_queue_{share,weight,overused}` and pod group counts by
phase from Job rows. Figures Volcano does not export are `schedweb_queue_{guarantee,elastic}_*`.
Scheduler gauges (metrics.go): preemption victims of the latest cycle, unscheduled tasks and
jobs now. Counters and histograms (schedweb.scheduling.metrics_latency) are running totals the
cycles keep (MetricTotal rows), never recomputed from the pruned history. Per-job gauges (job
share, e2e job scheduling times) are the cycle process's (schedweb.scheduling.metrics_jobs).
schedweb's own: `schedweb_*`.

Deprecated, kept for one release (DEPRECATED_ALIASES): `schedweb_queue_inqueue_*`, the previous
release's name of `volcano_queue_inqueue_*`.

`describe()` lists the families, so registering the collector runs no query; `collect()` runs
seven, none of them over the cycle history. /metrics itself serves the body the cycle rendered
(schedweb.scheduling.metrics_body): one query.

The body the cycle prerenders (`collect_text(shard, kept=True)`) is the same bytes at a cost that
follows what changed: the pod group, waiting-job and unscheduled-task counts come from the
counts this process keeps and brings up to date from the change log (metrics_counts), the
queue families' lines are rewritten only where a figure or count moved (metrics_queues).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from django.db import connection
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from schedweb.core.models import TERMINAL_JOB_PHASES, Job, JobPhase, Queue, Task, TaskStatus
from schedweb.scheduling import (
    metric_totals,
    metrics_counts,
    metrics_jobs,
    metrics_latency,
    metrics_queues,
    metrics_unscheduled,
)
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import CycleRun, QueueSample

QUEUE_FIGURES = ("allocated", "deserved", "request", "capability", "real_capability", "guarantee",
                 "elastic", "inqueue")
# QueueSample field -> (metric stem, deprecated stem or None, how a dimension's value reads:
# ZERO = absent is 0; SET = absent is not exported; LIMIT = absent or 0 is unset (unlimited, as a
# capability in Volcano), not exported)
ZERO, SET, LIMIT = "zero", "set", "limit"
QUEUE_METRICS = {
    "allocated": ("volcano_queue_allocated", None, ZERO),
    "request": ("volcano_queue_request", None, ZERO),
    "deserved": ("volcano_queue_deserved", None, ZERO),
    "capability": ("volcano_queue_capacity", None, LIMIT),
    "real_capability": ("volcano_queue_real_capacity", None, SET),
    "inqueue": ("volcano_queue_inqueue", "schedweb_queue_inqueue", ZERO),
    "guarantee": ("schedweb_queue_guarantee", None, SET),
    "elastic": ("schedweb_queue_elastic", None, ZERO),
}
UNITS = (("milli_cpu", "cpu", "CPU (milli cores)"), ("memory_bytes", "memory", "memory (bytes)"))
NOT_SCALARS = frozenset({"cpu", "memory", "pods"})
DEPRECATED_ALIASES = {f"{old}_{unit}": f"{new}_{unit}" for new, old, _ in QUEUE_METRICS.values() if old
                      for unit, _, _ in UNITS}
POD_GROUP_PHASES = (("inqueue", JobPhase.INQUEUE), ("pending", JobPhase.PENDING),
                    ("running", JobPhase.RUNNING), ("unknown", JobPhase.UNKNOWN),
                    ("completed", JobPhase.COMPLETED))
QUEUE = ["queue_name"]
LAST_CYCLE_AGE = "schedweb_last_cycle_age_seconds"
LAST_CYCLE_AGE_HELP = "Seconds since the last successful cycle started"
JOBS_SET_ASIDE_HELP = "Jobs set aside (InvalidJob) in the last cycle because their data or evaluation failed"


def _figure_help(figure: str, label: str) -> str:
    return f"{figure.replace('_', ' ').capitalize()} {label} of the queue"


def _queue_families(samples: list[tuple], pod_groups: dict[tuple[str, str], int],
                    queue_names: list[str]) -> Iterator[Metric]:
    """Every queue family, filled from `samples` (queue, share, weight, overused, *QUEUE_FIGURES)."""
    gauges: dict[str, GaugeMetricFamily] = {}
    for figure, (stem, old, _) in QUEUE_METRICS.items():
        for unit, _, label in UNITS:
            text = _figure_help(figure, label)
            gauges[f"{stem}_{unit}"] = GaugeMetricFamily(f"{stem}_{unit}", text, labels=QUEUE)
            if old:
                gauges[f"{old}_{unit}"] = GaugeMetricFamily(
                    f"{old}_{unit}", f"Deprecated: use {stem}_{unit}. {text}", labels=QUEUE)
        gauges[f"{stem}_scalar_resources"] = GaugeMetricFamily(
            f"{stem}_scalar_resources", _figure_help(figure, "scalar resource (milli units)"),
            labels=[*QUEUE, "resource"])
    share = GaugeMetricFamily("volcano_queue_share", "Share for one queue", labels=QUEUE)
    weight = GaugeMetricFamily("volcano_queue_weight", "Weight for one queue", labels=QUEUE)
    overused = GaugeMetricFamily("volcano_queue_overused", "If one queue is overused", labels=QUEUE)
    for row in samples:
        queue, values = row[0], dict(zip(QUEUE_FIGURES, row[4:], strict=True))
        share.add_metric([queue], row[1])
        weight.add_metric([queue], row[2])
        overused.add_metric([queue], 1.0 if row[3] else 0.0)
        for figure, (stem, old, reading) in QUEUE_METRICS.items():
            value = values.get(figure)
            if value is None:
                continue
            for unit, key, _ in UNITS:
                amount = float(value.get(key, 0))
                if reading == ZERO or (key in value and (reading == SET or amount > 0)):
                    for name in (stem, old) if old else (stem,):
                        gauges[f"{name}_{unit}"].add_metric([queue], amount)
            for resource in sorted(set(value) - NOT_SCALARS):
                if reading != LIMIT or value[resource] > 0:
                    gauges[f"{stem}_scalar_resources"].add_metric([queue, resource], float(value[resource]))
    yield from gauges.values()
    yield from (share, weight, overused)
    for phase, stored in POD_GROUP_PHASES:
        family = GaugeMetricFamily(f"volcano_queue_pod_group_{phase}_count",
                                   f"The number of {phase} PodGroup in this queue", labels=QUEUE)
        for queue in queue_names:
            family.add_metric([queue], pod_groups.get((queue, stored), 0))
        yield family


def _scheduler_families(last: tuple | None, pending: list[tuple[str, int]],
                        unscheduled_tasks: list[tuple[str, str, int]]) -> Iterator[Metric]:
    """Volcano's scheduler gauges from the latest cycle and the job table."""
    victims = GaugeMetricFamily("volcano_pod_preemption_victims", "Number of selected preemption victims")
    if last:
        victims.add_metric([], last[3])
    yield victims
    # A series per job (up to METRICS_JOB_SERIES_MAX): lines kept while they hold, as the job gauges'.
    tasks = metrics_jobs.JobGaugeFamily("volcano_unschedule_task_count",
                                        "Number of tasks could not be scheduled", labels=["job_id"])
    for namespace, name, n in unscheduled_tasks:
        tasks.add_metric([f"{namespace}/{name}"], n)
    yield tasks
    yield GaugeMetricFamily("volcano_unschedule_job_count", "Number of jobs could not be scheduled",
                            value=sum(n for _, n in pending))


class SchedulerCollector(Collector):
    """Queue figures, scheduler gauges, counters and histograms, pending jobs by reason, last cycle age."""

    def describe(self) -> Iterator[Metric]:
        """The families collect() yields, without touching the database."""
        yield from _queue_families([], {}, [])
        yield from _scheduler_families(None, [], [])
        yield from metrics_latency.empty_families()
        yield from metrics_jobs.families([])
        yield from _own_gauges(None, [], None)

    def collect(self) -> Iterator[Metric]:
        """The latest cycle, its samples, the job table's counts and the totals (seven queries)."""
        yield from collect_families(timezone.now())[0]


def collect_families(now: datetime | None) -> tuple[list[Metric], datetime | None]:
    """(every family, the newest successful cycle's start) in seven queries; `now` None leaves
    the last cycle's age without a sample (metrics_body adds it when it serves the body)."""
    found = _read()
    out = list(_queue_families(found.samples, found.pod_groups, found.queue_names))
    return out + _other_families(found, now), found.last[1] if found.last else None


def collect_text(shard: str = "", kept: bool = False) -> tuple[str, datetime | None]:
    """(the exposition of every family but the last cycle's age, the newest successful cycle's
    start) of the instance `shard` ("" = unsharded; its cycles only): collect_families' bytes,
    the queue families written by metrics_queues (each queue's lines again only when its sample
    changed; the samples this process's cycle kept, if it ran the newest one). `kept`: the job
    counts from this process's kept ones (metrics_counts; PostgreSQL), not counted afresh."""
    found = _read(shard, kept)
    out = _queue_parts(found.samples, found.pod_groups, found.queue_names, found.pod_text)
    last = found.last
    # The families after the queue ones, the two made of thousands of series written from kept lines.
    victims, tasks, jobs = _scheduler_families(last, found.pending, [])
    own = (f for f in _own_gauges(last, found.pending, None) if f.name != LAST_CYCLE_AGE)
    out += [exposition([victims, tasks]).decode("utf-8"),
            metrics_unscheduled.series_text(tasks.name, found.unscheduled),
            exposition([jobs, *metrics_latency.families(metric_totals.read())]).decode("utf-8"),
            metrics_jobs.families_text(metrics_jobs.SERIES.rows_of(last[0] if last else None)),
            exposition(own).decode("utf-8")]
    return "".join(out), last[1] if last else None  # megabytes: copied once


@dataclass
class _Found:
    """What the families are made of (collect_families' queries)."""

    last: tuple | None
    samples: list[tuple]
    pod_groups: dict[tuple[str, str], int]
    queue_names: list[str]
    pending: list[tuple[str, int]]
    unscheduled: list[tuple[str, str, int]]
    pod_text: dict[str, str] | None = None  # the pod group families' lines, when kept


# The newest METRICS_JOB_SERIES_MAX waiting jobs with tasks to place and how many: one hash
# aggregate of the waiting tasks joined to the jobs (the ORM's GROUP BY over the join sorted every
# waiting task by its job's name first). (namespace, name) is unique: no two jobs group together.
UNSCHEDULED_SQL = (
    "SELECT j.namespace, j.name, c.n FROM {job} j JOIN (SELECT job_id, count(*) AS n FROM {task} "
    "WHERE status = ANY(%s) GROUP BY job_id) c ON c.job_id = j.id "
    "WHERE NOT (j.phase = ANY(%s)) AND j.reason_code <> '' "
    "ORDER BY j.created DESC, j.namespace, j.name LIMIT %s")


def _name_order(names: list[str]) -> list[str]:
    """Names (of queues, reason codes) as the database orders text (its collation; SQLite:
    binary), as an ORDER BY of the column would."""
    if connection.vendor != "postgresql":
        return sorted(names)
    with connection.cursor() as cursor:
        cursor.execute("SELECT array_agg(q ORDER BY q) FROM unnest(%s::text[]) AS q", [names])
        return list(cursor.fetchone()[0] or [])


def _read(shard: str | None = None, kept: bool = False) -> _Found:
    # `shard`: the newest cycle of that instance only (its body); None: of any instance.
    runs = CycleRun.objects.filter(skipped=False, errors="")
    last = ((runs if shard is None else runs.filter(shard=shard)).order_by("-id")
            .values_list("id", "started", "job_errors", "evictions").first())
    samples = metrics_queues.KEPT.rows_of(last[0], _name_order) if last else []
    if samples is None:
        samples = list(QueueSample.objects.filter(cycle_id=last[0]).values_list(
            "queue", "share", "weight", "overused", *QUEUE_FIGURES))
    if kept and connection.vendor == "postgresql":
        return _read_kept(last, samples)
    queues = dict(Queue.objects.order_by("name").values_list("id", "name"))
    # One scan of the jobs for both the pod groups by queue and phase and the waiting jobs by
    # reason code (each of its own GROUP BY before).
    groups = list(Job.objects.values_list("queue_id", "phase", "reason_code").annotate(n=Count("id"))
                  .order_by())
    pod_groups: dict[tuple[str, str], int] = {}
    by_code: dict[str, int] = {}
    for queue_id, phase, code, n in groups:
        if code and phase not in TERMINAL_JOB_PHASES:
            by_code[code] = by_code.get(code, 0) + n
        name = queues.get(queue_id)
        if name is not None:
            pod_groups[(name, phase)] = pod_groups.get((name, phase), 0) + n
    if any(queue_id not in queues for queue_id, *_ in groups):  # a queue created since it was read
        pod_groups = {(queue, phase): n for queue, phase, n in Job.objects.values_list(
            "queue__name", "phase").annotate(n=Count("id")).order_by()}
    pending = [(code, by_code[code]) for code in _name_order(list(by_code))]
    waiting = Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).exclude(reason_code="")
    statuses = (TaskStatus.PENDING, TaskStatus.PIPELINED)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(UNSCHEDULED_SQL.format(job=Job._meta.db_table, task=Task._meta.db_table),
                           [list(statuses), list(TERMINAL_JOB_PHASES), metrics_jobs.series_max()])
            newest = cursor.fetchall()
    else:
        newest = [(namespace, name, n) for namespace, name, _, n in (
            Task.objects.filter(status__in=statuses, job__in=waiting)
            .values_list("job__namespace", "job__name", "job__created").annotate(n=Count("id"))
            .order_by("-job__created", "job__namespace", "job__name")[:metrics_jobs.series_max()])]
    return _Found(last, samples, pod_groups, list(queues.values()), pending, sorted(newest))


_POD_TEXT = metrics_queues.PodGroupText(POD_GROUP_PHASES)
_code_order: list[tuple[frozenset[str], list[str]]] = []  # (codes, as the database orders them)


def _read_kept(last: tuple | None, samples: list[tuple]) -> _Found:
    """_read's job counts from this process's kept counts (metrics_counts)."""
    counts = metrics_counts.current()
    codes = frozenset(counts.codes)
    if not _code_order or _code_order[0][0] != codes:  # asked only when the set of codes moves
        _code_order[:] = [(codes, _name_order(list(codes)))]
    pending = [(code, counts.codes[code]) for code in _code_order[0][1]]
    pod_text = _POD_TEXT.texts(counts, counts.queues, counts.groups, counts.take_dirty())
    return _Found(last, samples, {}, [name for _, name in counts.queues], pending,
                  counts.unscheduled(metrics_jobs.series_max()), pod_text)


def _other_families(found: _Found, now: datetime | None) -> list[Metric]:
    """Every family after the queue ones."""
    last = found.last
    out = list(_scheduler_families(last, found.pending, found.unscheduled))
    out += metrics_latency.families(metric_totals.read())
    out += metrics_jobs.families(metrics_jobs.SERIES.rows_of(last[0] if last else None))
    out += _own_gauges(last, found.pending, now)
    return out


@lru_cache(maxsize=1)
def _queue_headers() -> tuple[tuple[str, str], ...]:
    """(name, HELP and TYPE lines) of each queue family, in _queue_families' order."""
    return tuple((f.name, exposition([f]).decode("utf-8")) for f in _queue_families([], {}, []))


_QUEUE_TEXT = metrics_queues.QueueText(QUEUE_FIGURES, QUEUE_METRICS, UNITS, NOT_SCALARS, LIMIT, SET, ZERO)


def _queue_text(samples: list[tuple], pod_groups: dict[tuple[str, str], int], queue_names: list[str],
                pod_text: dict[str, str] | None = None) -> str:
    """exposition(_queue_families(...)), written directly (metrics_queues); `pod_text`: the pod
    group families' lines already written (metrics_queues.PodGroupText), else from `pod_groups`."""
    return "".join(_queue_parts(samples, pod_groups, queue_names, pod_text))


def _queue_parts(samples: list[tuple], pod_groups: dict[tuple[str, str], int], queue_names: list[str],
                 pod_text: dict[str, str] | None = None) -> list[str]:
    """_queue_text's parts, in order."""
    lines = _QUEUE_TEXT.samples_text(samples)
    labels = [metrics_queues.label_of(queue) for queue in queue_names] if pod_text is None else []
    counts = {f"volcano_queue_pod_group_{phase}_count": stored for phase, stored in POD_GROUP_PHASES}
    out = []
    for name, header in _queue_headers():
        out.append(header)
        if (stored := counts.get(name)) is None:
            out.append(lines.get(name, ""))
        elif pod_text is not None:
            out.append(pod_text.get(name, ""))
        else:
            out.extend(f"{name}{label} {floatToGoString(pod_groups.get((queue, stored), 0))}\n"
                       for queue, label in zip(queue_names, labels, strict=True))
    return out


def _own_gauges(last: tuple | None, pending: list[tuple[str, int]], now: datetime | None) -> Iterator[Metric]:
    """schedweb's gauges: pending jobs by reason, the last cycle's age and set-aside jobs."""
    by_reason = GaugeMetricFamily("schedweb_pending_jobs", "Jobs waiting, by reason code", labels=["reason"])
    for code, n in pending:
        by_reason.add_metric([code], n)
    yield by_reason
    age = GaugeMetricFamily(LAST_CYCLE_AGE, LAST_CYCLE_AGE_HELP)
    if last and now is not None:
        age.add_metric([], (now - last[1]).total_seconds())
    yield age
    yield GaugeMetricFamily("schedweb_jobs_set_aside", JOBS_SET_ASIDE_HELP, value=last[2] if last else 0)

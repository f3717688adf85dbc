"""Prometheus collector reading the database at scrape time (Volcano's metric names where they exist).

Queue gauges come from the latest cycle's QueueSample rows; cycle timings from CycleRun rows;
pending jobs by reason from Job. `describe()` lists the families, so registering the collector
runs no query (at import or otherwise); only `collect()` does.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from schedweb.core.models import TERMINAL_JOB_PHASES, Job
from schedweb.scheduling.models import CycleRun, QueueSample

CYCLE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
QUEUE_FIGURES = ("allocated", "deserved", "request", "capability", "real_capability", "guarantee",
                 "elastic", "inqueue")
UNITS = (("milli_cpu", "cpu", "milli cpu"), ("memory_bytes", "memory", "memory bytes"))
# (metric name, QueueSample field, stored resource key, help text)
QUEUE_RESOURCE_GAUGES = [(f"volcano_queue_{figure}_{unit}", figure, key,
                          f"{figure.replace('_', ' ').capitalize()} {label} of the queue")
                         for figure in QUEUE_FIGURES for unit, key, label in UNITS]
QUEUE = ["queue_name"]
JOBS_SET_ASIDE_HELP = "Jobs set aside (InvalidJob) in the last cycle because their data or evaluation failed"


def _queue_families(samples: list[tuple]) -> Iterator[Metric]:
    gauges = {name: GaugeMetricFamily(name, doc, labels=QUEUE) for name, _, _, doc in QUEUE_RESOURCE_GAUGES}
    share = GaugeMetricFamily("volcano_queue_share", "Share of the queue (dominant resource)", labels=QUEUE)
    weight = GaugeMetricFamily("volcano_queue_weight", "Weight of the queue", labels=QUEUE)
    overused = GaugeMetricFamily("volcano_queue_overused", "1 when the queue is overused", labels=QUEUE)
    for row in samples:
        queue, values = row[0], dict(zip(QUEUE_FIGURES, row[4:], strict=True))
        share.add_metric([queue], row[1])
        weight.add_metric([queue], row[2])
        overused.add_metric([queue], 1.0 if row[3] else 0.0)
        for name, figure, key, _ in QUEUE_RESOURCE_GAUGES:
            value = values.get(figure)
            if value is not None:
                gauges[name].add_metric([queue], float(value.get(key, 0)))
    yield from gauges.values()
    yield from (share, weight, overused)


class SchedulerCollector(Collector):
    """Queue figures, cycle duration histogram, pending jobs by reason, last cycle age."""

    def describe(self) -> Iterator[Metric]:
        """The families collect() yields, without touching the database."""
        yield from _queue_families([])
        yield HistogramMetricFamily("schedweb_cycle_duration_seconds", "Scheduling cycle duration")
        yield GaugeMetricFamily("schedweb_pending_jobs", "Jobs waiting, by reason code", labels=["reason"])
        yield GaugeMetricFamily("schedweb_last_cycle_age_seconds", "Seconds since the last cycle started")
        yield CounterMetricFamily("schedweb_cycles", "Cycles by outcome", labels=["outcome"])
        yield CounterMetricFamily("schedweb_cycle_conflicts", "Decisions dropped for concurrent changes")
        yield GaugeMetricFamily("schedweb_jobs_set_aside", JOBS_SET_ASIDE_HELP)
        yield CounterMetricFamily("schedweb_agent_failures", "Simulated agent steps that failed")

    def collect(self) -> Iterator[Metric]:
        """Read the latest samples and the cycle history (a handful of aggregate queries)."""
        last = (CycleRun.objects.filter(skipped=False, errors="").order_by("-id")
                .values_list("id", "started", "job_errors").first())
        samples = list(QueueSample.objects.filter(cycle_id=last[0]).values_list(
            "queue", "share", "weight", "overused", *QUEUE_FIGURES)) if last else []
        yield from _queue_families(samples)

        ran = CycleRun.objects.filter(skipped=False, errors="")
        agg = ran.aggregate(total=Count("id"), sum=_sum("duration_seconds"),
                            **{f"le{i}": Count("id", filter=Q(duration_seconds__lte=b))
                               for i, b in enumerate(CYCLE_BUCKETS)})
        buckets = [(str(b), agg[f"le{i}"]) for i, b in enumerate(CYCLE_BUCKETS)] + [("+Inf", agg["total"])]
        hist = HistogramMetricFamily("schedweb_cycle_duration_seconds", "Scheduling cycle duration")
        hist.add_metric([], buckets, sum_value=agg["sum"] or 0.0)
        yield hist

        pending = GaugeMetricFamily("schedweb_pending_jobs", "Jobs waiting, by reason code",
                                    labels=["reason"])
        for code, n in (Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).exclude(reason_code="")
                        .values_list("reason_code").annotate(n=Count("id")).order_by("reason_code")):
            pending.add_metric([code], n)
        yield pending

        age = GaugeMetricFamily("schedweb_last_cycle_age_seconds", "Seconds since the last cycle started")
        if last:
            age.add_metric([], (timezone.now() - last[1]).total_seconds())
        yield age

        outcomes = CycleRun.objects.aggregate(
            n_ok=Count("id", filter=Q(skipped=False, errors="")),
            n_skipped=Count("id", filter=Q(skipped=True)),
            n_failed=Count("id", filter=Q(skipped=False) & ~Q(errors="")), n_conflicts=_sum("conflicts"),
            n_agent_failed=Count("id", filter=~Q(agent_error="")))
        cycles = CounterMetricFamily("schedweb_cycles", "Cycles by outcome", labels=["outcome"])
        for outcome in ("ok", "skipped", "failed"):
            cycles.add_metric([outcome], outcomes[f"n_{outcome}"])
        yield cycles
        yield CounterMetricFamily("schedweb_cycle_conflicts", "Decisions dropped for concurrent changes",
                                  value=outcomes["n_conflicts"] or 0)
        yield GaugeMetricFamily("schedweb_jobs_set_aside", JOBS_SET_ASIDE_HELP, value=last[2] if last else 0)
        yield CounterMetricFamily("schedweb_agent_failures", "Simulated agent steps that failed",
                                  value=outcomes["n_agent_failed"])


def _sum(field: str):  # noqa: ANN202 - a Django aggregate expression
    from django.db.models import Sum

    return Sum(field)

"""/metrics' counters and histograms: their names, buckets, what each cycle adds, their exposition.

Like Volcano's (pkg/scheduler/metrics), they count since the beginning, never over a window: each
cycle adds its figures to the MetricTotal rows (schedweb.scheduling.metric_totals) in its own
transaction, and a scrape reads the totals in one query. Pruning the cycle history changes none
of them; every web process exports the same values.

Bucket bounds start as Volcano's (`prometheus.ExponentialBuckets`) and go on doubling further,
since a Python cycle is slower than Volcano's bounds assume (the plugin ones stop at Volcano's
last: hundreds of series, and a callback takes micro- to milliseconds; action and plugin ones
also get three below Volcano's first bound): every `le` label Volcano's dashboards use exists.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample

from schedweb.scheduling.metric_totals import histogram_samples


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets(start, factor, count)."""
    return tuple(start * factor ** i for i in range(count))


# Volcano: ExponentialBuckets(5, 2, 10) (e2e, action, plugin, task) and (32, 2, 10) (job e2e).
E2E_MS_BUCKETS = exponential_buckets(5, 2, 15)                          # 5 ms .. 82 s
STEP_MS_BUCKETS = (0.01, 0.1, 1.0, *exponential_buckets(5, 2, 15))      # 10 us .. 82 s
PLUGIN_MS_BUCKETS = (0.01, 0.1, 1.0, *exponential_buckets(5, 2, 10))    # 10 us .. 2.56 s, as Volcano
WAIT_MS_BUCKETS = exponential_buckets(5, 2, 24)                         # 5 ms .. 11.6 h
JOB_E2E_MS_BUCKETS = exponential_buckets(32, 2, 24)                     # 32 ms .. 74 h
CYCLE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class Histogram:
    """A histogram family: name, help, bucket bounds, label names."""

    name: str
    help: str
    bounds: tuple[float, ...]
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Counter:
    """A counter family (exported with the `_total` suffix unless `exact`: a name upstream defines
    without it); `always`: label values exported at 0."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    always: tuple[tuple[str, ...], ...] = ((),)
    exact: bool = False


class ExactCounterFamily(Metric):
    """A counter whose samples carry exactly the family's name, as Go's client exports a counter
    named without `_total` (metrics_text writes it so; prometheus_client's own writer would not)."""

    def __init__(self, name: str, documentation: str, labels: list[str]) -> None:
        super().__init__(name, documentation, "counter")
        self.label_names = labels

    def add_metric(self, labels: list[str], value: float) -> None:
        """One sample of this counter."""
        self.samples.append(Sample(self.name, dict(zip(self.label_names, labels, strict=True)), value))


CYCLE_DURATION = Histogram("schedweb_cycle_duration_seconds", "Scheduling cycle duration", CYCLE_BUCKETS)
E2E = Histogram("volcano_e2e_scheduling_latency_milliseconds",
                "E2e scheduling latency in milliseconds (scheduling algorithm + binding)", E2E_MS_BUCKETS)
ACTION = Histogram("volcano_action_scheduling_latency_milliseconds",
                   "Action scheduling latency in milliseconds", STEP_MS_BUCKETS, ("action",))
PLUGIN = Histogram("volcano_plugin_scheduling_latency_milliseconds",
                   "Plugin scheduling latency in milliseconds", PLUGIN_MS_BUCKETS, ("plugin", "OnSession"))
TASK = Histogram("volcano_task_scheduling_latency_milliseconds",
                 "Task scheduling latency in milliseconds (task created to bound)", WAIT_MS_BUCKETS)
JOB_E2E = Histogram("volcano_e2e_job_scheduling_latency_milliseconds",
                    "E2e job scheduling latency in milliseconds (job created to its first tasks bound)",
                    JOB_E2E_MS_BUCKETS)
OPEN_SESSION = Histogram("volcano_open_session_duration_milliseconds",
                         "Open session duration in milliseconds (the snapshot, then every plugin's "
                         "OnSessionOpen)", STEP_MS_BUCKETS)
STAGE = Histogram("volcano_scheduling_stage_duration_milliseconds",
                  "Scheduling stage duration in milliseconds, by stage: snapshot, open_session, actions, "
                  "close_session, write", STEP_MS_BUCKETS, ("stage",))
HISTOGRAMS = (CYCLE_DURATION, E2E, ACTION, PLUGIN, TASK, JOB_E2E, OPEN_SESSION, STAGE)

ATTEMPTS = Counter(
    "volcano_schedule_attempts",
    "Number of attempts to schedule pods, by the result: scheduled (tasks bound), unschedulable "
    "(jobs left waiting, once per cycle), error (failed cycles)", ("result",),
    (("scheduled",), ("unschedulable",), ("error",)))
CYCLES = Counter("schedweb_cycles", "Cycles by outcome", ("outcome",), (("ok",), ("skipped",), ("failed",)))
CONFLICTS = Counter("schedweb_cycle_conflicts", "Decisions dropped for concurrent changes")
AGENT_FAILURES = Counter("schedweb_agent_failures", "Simulated agent steps that failed")
EVICTIONS = Counter("volcano_eviction_transactions",
                    "Evictions the cycles wrote (each victim task set Releasing in the cycle's transaction)")
# Upstream: `volcano_total_preemption_attempts`, a counter without the suffix.
PREEMPTION_ATTEMPTS = Counter("volcano_total_preemption_attempts",
                              "Total preemption attempts in the cluster till now", exact=True)
COUNTERS = (ATTEMPTS, CYCLES, CONFLICTS, AGENT_FAILURES, EVICTIONS, PREEMPTION_ATTEMPTS)

ON_SESSION = {"open": "OnSessionOpen", "close": "OnSessionClose"}


def _counter_family(spec: Counter, series: Mapping[str, Mapping[str, float]]) -> Metric:
    family = (ExactCounterFamily if spec.exact else CounterMetricFamily)(spec.name, spec.help,
                                                                         labels=list(spec.labels))
    values = {tuple(json.loads(labels).get(n, "") for n in spec.labels): parts.get("", 0.0)
              for labels, parts in series.items()}
    for key in spec.always:
        values.setdefault(key, 0.0)
    for key in sorted(values):
        family.add_metric(list(key), values[key])
    return family


def _histogram_family(spec: Histogram, series: Mapping[str, Mapping[str, float]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(spec.name, spec.help, labels=list(spec.labels))
    rows = {tuple(json.loads(labels).get(n, "") for n in spec.labels): parts
            for labels, parts in series.items()}
    if not spec.labels:
        rows.setdefault((), {})  # an unlabelled histogram exists from the start, at zero
    for key in sorted(rows):
        buckets, total = histogram_samples(rows[key], spec.bounds)
        family.add_metric(list(key), buckets, sum_value=total)
    return family


def families(totals: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Iterator[Metric]:
    """Every counter and histogram family from the totals (metric_totals.read())."""
    for spec in COUNTERS:
        yield _counter_family(spec, totals.get(spec.name, {}))
    for hist in HISTOGRAMS:
        yield _histogram_family(hist, totals.get(hist.name, {}))


def empty_families() -> Iterator[Metric]:
    """The same families without samples (for describe(): no query)."""
    yield from families({})

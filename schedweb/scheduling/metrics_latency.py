"""Volcano's scheduler metrics from the recorded cycles (schedweb.scheduling.metrics uses these).

Volcano's histograms live in the scheduler process and count since it started; ours are read
from the CycleRun rows kept (SCHEDULER_HISTORY_DAYS), so they count the cycles of that window
(and drop with pruning). Bucket bounds start as Volcano's (`prometheus.ExponentialBuckets`) and
go on doubling further, since a Python cycle is slower than Volcano's bounds assume: the le
labels Volcano's dashboards use all exist.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, FloatField, Min, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from prometheus_client.core import HistogramMetricFamily

from schedweb.core.models import Job


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets(start, factor, count)."""
    return tuple(start * factor ** i for i in range(count))


# Volcano: ExponentialBuckets(5, 2, 10) (e2e, action, plugin) and (32, 2, 10) (job e2e); longer here.
E2E_MS_BUCKETS = exponential_buckets(5, 2, 15)            # 5 ms .. 82 s
ACTION_US_BUCKETS = exponential_buckets(5, 2, 22)         # 5 us .. 10.5 s
JOB_E2E_MS_BUCKETS = exponential_buckets(32, 2, 24)       # 32 ms .. 74 h

E2E_HELP = "E2e scheduling latency in milliseconds (scheduling algorithm + binding)"
ACTION_HELP = "Action scheduling latency in microseconds"
PLUGIN_HELP = "Plugin scheduling latency in microseconds"
JOB_E2E_HELP = "E2e job scheduling latency in milliseconds (job created to its first task started)"
ACTION_KEY = re.compile(r"^action_(?P<action>.+)_s$")
# Per-plugin timings, when the session records them: plugin_<name>_open_s / plugin_<name>_close_s.
PLUGIN_KEY = re.compile(r"^plugin_(?P<plugin>.+)_(?P<when>open|close)_s$")
ON_SESSION = {"open": "OnSessionOpen", "close": "OnSessionClose"}


def _label(value: float) -> str:
    """A bucket bound as prometheus_client writes it (5.0, 2560.0, 1.31072e+06)."""
    return repr(float(value))


def _histogram(qs: QuerySet, field: str, bounds: Iterable[float], scale: float, prefix: str) -> dict:
    """Aggregates for one histogram over `field` (seconds) in `bounds` (seconds * scale)."""
    out = {f"{prefix}_n": Count("id", filter=Q(**{f"{field}__isnull": False})), f"{prefix}_sum": Sum(field)}
    for i, bound in enumerate(bounds):
        out[f"{prefix}_le{i}"] = Count("id", filter=Q(**{f"{field}__lte": bound / scale}))
    return out


def _buckets(agg: dict, prefix: str, bounds: tuple[float, ...]) -> list[tuple[str, float]]:
    return ([(_label(b), agg[f"{prefix}_le{i}"]) for i, b in enumerate(bounds)]
            + [("+Inf", agg[f"{prefix}_n"])])


def timing_series(latest_timing: dict | None) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(action names, (plugin, OnSession, timing key)) the latest cycle's timing carries, sorted."""
    actions, plugins = [], []
    for key in sorted(latest_timing or {}):
        if m := ACTION_KEY.match(key):
            actions.append(m["action"])
        elif m := PLUGIN_KEY.match(key):
            plugins.append((m["plugin"], ON_SESSION[m["when"]], key))
    return actions, plugins


def cycle_histograms(ran: QuerySet, latest_timing: dict | None) -> Iterator[HistogramMetricFamily]:
    """volcano_e2e_scheduling_latency_milliseconds, volcano_action_scheduling_latency_microseconds
    {action} and volcano_plugin_scheduling_latency_microseconds{plugin,OnSession}, in one query
    over the successful cycles `ran`."""
    actions, plugins = timing_series(latest_timing)
    keys = [f"action_{a}_s" for a in actions] + [key for _, _, key in plugins]
    aliases = {key: f"t{i}" for i, key in enumerate(keys)}
    qs = ran.annotate(**{alias: Cast(KT(f"timing__{key}"), FloatField()) for key, alias in aliases.items()})
    spec = _histogram(qs, "duration_seconds", E2E_MS_BUCKETS, 1e3, "e2e")
    for alias in aliases.values():
        spec.update(_histogram(qs, alias, ACTION_US_BUCKETS, 1e6, alias))
    agg = qs.aggregate(**spec)
    e2e = HistogramMetricFamily("volcano_e2e_scheduling_latency_milliseconds", E2E_HELP)
    e2e.add_metric([], _buckets(agg, "e2e", E2E_MS_BUCKETS), sum_value=(agg["e2e_sum"] or 0.0) * 1e3)
    yield e2e
    action = HistogramMetricFamily("volcano_action_scheduling_latency_microseconds", ACTION_HELP,
                                   labels=["action"])
    for name in actions:
        alias = aliases[f"action_{name}_s"]
        action.add_metric([name], _buckets(agg, alias, ACTION_US_BUCKETS),
                          sum_value=(agg[f"{alias}_sum"] or 0.0) * 1e6)
    yield action
    plugin = HistogramMetricFamily("volcano_plugin_scheduling_latency_microseconds", PLUGIN_HELP,
                                   labels=["plugin", "OnSession"])
    for name, when, key in plugins:
        alias = aliases[key]
        plugin.add_metric([name, when], _buckets(agg, alias, ACTION_US_BUCKETS),
                          sum_value=(agg[f"{alias}_sum"] or 0.0) * 1e6)
    yield plugin


def job_latency_histogram(now: datetime) -> HistogramMetricFamily:
    """volcano_e2e_job_scheduling_latency_milliseconds over the jobs created in the history
    window that have started: creation to the first task's start."""
    days = float(getattr(settings, "SCHEDULER_HISTORY_DAYS", 1))
    rows = (Job.objects.filter(created__gte=now - timedelta(days=days)).annotate(first=Min("tasks__started"))
            .filter(first__isnull=False).values_list("created", "first").order_by())
    counts = [0] * (len(JOB_E2E_MS_BUCKETS) + 1)  # per bucket, not yet cumulative; last = above all
    total = 0.0
    for created, first in rows:
        ms = max(0.0, (first - created).total_seconds() * 1e3)
        total += ms
        counts[bisect.bisect_left(JOB_E2E_MS_BUCKETS, ms)] += 1
    cumulative = list(itertools.accumulate(counts))
    family = HistogramMetricFamily("volcano_e2e_job_scheduling_latency_milliseconds", JOB_E2E_HELP)
    family.add_metric([], [(_label(b), c) for b, c in zip(JOB_E2E_MS_BUCKETS, cumulative, strict=False)]
                      + [("+Inf", cumulative[-1])], sum_value=total)
    return family


def empty_families() -> Iterator[HistogramMetricFamily]:
    """The histogram families without samples (for describe())."""
    yield HistogramMetricFamily("volcano_e2e_scheduling_latency_milliseconds", E2E_HELP)
    yield HistogramMetricFamily("volcano_action_scheduling_latency_microseconds", ACTION_HELP,
                                labels=["action"])
    yield HistogramMetricFamily("volcano_plugin_scheduling_latency_microseconds", PLUGIN_HELP,
                                labels=["plugin", "OnSession"])
    yield HistogramMetricFamily("volcano_e2e_job_scheduling_latency_milliseconds", JOB_E2E_HELP)

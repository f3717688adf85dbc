"""Running totals behind /metrics' counters and histograms: MetricTotal rows, one per series part.

A writer collects its increments in `Totals` and applies them in one upsert
(`INSERT ... ON CONFLICT DO UPDATE SET value = value + excluded.value`, PostgreSQL and SQLite
alike) inside its own transaction: the cycle's figures commit or roll back with the cycle. The
rows are never pruned, so the totals only grow (Prometheus sees no reset when history is
trimmed) and every web process reads the same ones (one query, as many rows as series, whatever
the length of the history).

Histograms are stored per bucket (the observations whose value is at most that bound and above
the previous one) plus their sum; `histogram_samples` makes them cumulative at read time.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping

from django.db import connection

from schedweb.scheduling.models import MetricTotal

SUM = "sum"
INF = "+Inf"
Key = tuple[str, str, str]  # (name, labels as canonical JSON, sample)


def label_text(labels: Mapping[str, str] | None) -> str:
    """Canonical JSON of a label set (sorted keys, no spaces): the `labels` column."""
    return json.dumps(dict(labels or {}), sort_keys=True, separators=(",", ":"))


def bound_text(bound: float) -> str:
    """A bucket bound as prometheus_client writes an `le` label (5.0, 2560.0, 1.31072e+06)."""
    return repr(float(bound))


class Totals:
    """Increments to apply together (`apply`)."""

    def __init__(self) -> None:
        self.increments: dict[Key, float] = defaultdict(float)

    def count(self, name: str, value: float = 1.0, labels: Mapping[str, str] | None = None) -> None:
        """Add `value` to the counter `name{labels}` (a zero still creates the row: the series exists)."""
        self.increments[(name, label_text(labels), "")] += float(value)

    def observe(self, name: str, bounds: tuple[float, ...], value: float,
                labels: Mapping[str, str] | None = None) -> None:
        """One observation of the histogram `name{labels}` with these bucket bounds (sorted)."""
        index = bisect.bisect_left(bounds, value)
        bucket = bound_text(bounds[index]) if index < len(bounds) else INF
        text = label_text(labels)
        self.increments[(name, text, bucket)] += 1.0
        self.increments[(name, text, SUM)] += float(value)

    def apply(self) -> None:
        """One upsert of every increment, in key order (concurrent writers lock rows alike)."""
        if not self.increments:
            return
        rows = sorted(self.increments.items())
        table = MetricTotal._meta.db_table
        values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
        params = [part for (name, labels, sample), value in rows for part in (name, labels, sample, value)]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (name, labels, sample, value) VALUES {values} "  # noqa: S608 (fixed names)
                f"ON CONFLICT (name, labels, sample) DO UPDATE SET value = {table}.value + excluded.value",
                params)
        self.increments.clear()


def add(name: str, value: float = 1.0, labels: Mapping[str, str] | None = None) -> None:
    """Apply one counter increment now (in the caller's transaction, if any)."""
    totals = Totals()
    totals.count(name, value, labels)
    totals.apply()


def read() -> dict[str, dict[str, dict[str, float]]]:
    """Every total: {name: {labels JSON: {sample: value}}}, in one query."""
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for name, labels, sample, value in MetricTotal.objects.values_list("name", "labels", "sample", "value"):
        out[name][labels][sample] = value
    return out


def histogram_samples(parts: Mapping[str, float], bounds: Iterable[float],
                      ) -> tuple[list[tuple[str, float]], float]:
    """(cumulative buckets with +Inf, sum) of one stored histogram series. Buckets stored under a
    bound the code no longer has fall into the next bound it has (never lost, never earlier)."""
    bounds = sorted(bounds)
    per_bound = [0.0] * (len(bounds) + 1)
    for sample, value in parts.items():
        if sample == SUM:
            continue
        where = len(bounds) if sample == INF else bisect.bisect_left(bounds, float(sample))
        per_bound[where] += value
    buckets, running = [], 0.0
    for bound, n in zip([*map(bound_text, bounds), INF], per_bound, strict=True):
        running += n
        buckets.append((bound, running))
    return buckets, parts.get(SUM, 0.0)

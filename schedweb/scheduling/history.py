"""A queue's share history (QueueSample rows) over a time window, downsampled for long windows.

Downsampling rule (the queue page's charts and `GET /api/v1/queues/{name}/history/` alike): when
the window holds more than `max_points` samples of the queue, the window [since, until] is cut
into `max_points` buckets of equal length and each non-empty bucket keeps its *newest* sample.
Every point is then a figure a cycle really committed (never an average that no cycle saw), and
a change of share shows up within one bucket of when it happened. Windows with at most
`max_points` samples are returned whole. Two queries: the samples' times, then the kept rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from schedweb.scheduling.models import QueueSample

DEFAULT_POINTS = 500
MAX_POINTS = 2000
FIGURES = ("deserved", "allocated", "request", "inqueue", "elastic", "capability", "real_capability",
           "guarantee")


@dataclass
class History:
    """The kept samples (oldest first) and how they were chosen."""

    queue: str
    since: datetime
    until: datetime
    samples: int                       # samples of the queue in the window
    bucket_seconds: float | None       # None: not downsampled
    points: list[dict[str, Any]]       # time, cycle, share, overused and FIGURES in stored units

    @property
    def downsampled(self) -> bool:
        """True when buckets were used (more samples than points)."""
        return self.bucket_seconds is not None


def queue_history(queue: str, since: datetime | None, until: datetime | None = None,
                  max_points: int = DEFAULT_POINTS) -> History:
    """The queue's samples in [since, until] (since None: from its first sample; until None: now),
    at most `max_points` of them by the rule of the module docstring."""
    until = until or timezone.now()
    qs = QueueSample.objects.filter(queue=queue, created__lte=until)
    if since is not None:
        qs = qs.filter(created__gte=since)
    times = list(qs.order_by("created", "id").values_list("id", "created"))
    start = since or (times[0][1] if times else until)
    bucket = None
    ids = [i for i, _ in times]
    if len(times) > max_points:
        span = max((until - start).total_seconds(), 1e-6)
        width = span / max_points
        kept: dict[int, int] = {}
        for sample_id, created in times:  # oldest first: the last one seen per bucket is its newest
            index = min(int((created - start).total_seconds() / width), max_points - 1)
            kept[index] = sample_id
        ids = [kept[i] for i in sorted(kept)]
        bucket = width
    rows = (QueueSample.objects.filter(id__in=ids).order_by("created", "id")
            .values("id", "cycle_id", "created", "share", "overused", *FIGURES)) if ids else []
    points = [{"time": r["created"], "cycle": r["cycle_id"], "share": r["share"], "overused": r["overused"],
               **{f: r[f] for f in FIGURES}} for r in rows]
    return History(queue, start, until, len(times), bucket, points)


def window(range_span: timedelta | None) -> datetime | None:
    """`since` for a span back from now (None: the whole history)."""
    return None if range_span is None else timezone.now() - range_span

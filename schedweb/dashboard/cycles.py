"""Reads of schedweb.scheduling's cycle records for the pages (CycleRun, JobReasonHistory).

Every function answers "nothing recorded yet" (None / empty) before the first cycle. The newest
cycle's queue figures are schedweb.scheduling.selectors.latest_samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from schedweb.scheduling.models import CycleRun, JobReasonHistory


@dataclass(frozen=True)
class CycleHealth:
    """The last cycle's age and duration, and how many cycles were skipped recently."""

    last_started: datetime | None
    age_seconds: float | None
    duration_seconds: float | None
    phases: dict[str, float]
    counts: dict[str, int]
    skipped_recent: int
    cycles_recent: int
    errors: str
    config_version: int | None


def cycle_health(window: timedelta = timedelta(hours=1)) -> CycleHealth:
    """Health of the scheduling loop from CycleRun rows (two queries)."""
    last = CycleRun.objects.filter(skipped=False).order_by("-started").first()
    since = timezone.now() - window
    recent = CycleRun.objects.filter(started__gte=since)
    cycles = recent.count()
    skipped = recent.filter(skipped=True).count()
    if last is None:
        return CycleHealth(None, None, None, {}, {}, skipped, cycles, "", None)
    phases = {p: float(getattr(last, f"{p}_seconds", 0.0) or 0.0) for p in ("load", "schedule", "write")}
    counts = {c: int(getattr(last, c, 0) or 0) for c in ("binds", "pipelined", "evictions", "pending_jobs")}
    duration = getattr(last, "duration_seconds", None)
    if duration is None:
        duration = sum(phases.values())
    errors = getattr(last, "errors", "") or ""
    return CycleHealth(
        last_started=last.started,
        age_seconds=(timezone.now() - last.started).total_seconds(),
        duration_seconds=float(duration),
        phases=phases,
        counts=counts,
        skipped_recent=skipped,
        cycles_recent=cycles,
        errors=errors if isinstance(errors, str) else "; ".join(map(str, errors)),
        config_version=getattr(last, "config_version", None),
    )


def reason_history(job_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """The job's reason timeline, oldest first: code, message, first_seen, last_seen."""
    rows = list(JobReasonHistory.objects.filter(job_id=job_id).order_by("-id").values(
        "code", "message", "first_seen", "last_seen")[:limit])
    rows.reverse()
    return rows

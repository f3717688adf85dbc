"""Reads of schedweb.scheduling's records (CycleRun, QueueSample, JobReasonHistory).

The one module of the dashboard that knows those models; every function answers "nothing
recorded yet" (None / empty) when the scheduling app is not installed or has not run a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db.models import Model
from django.utils import timezone


def _model(name: str) -> type[Model] | None:
    if not apps.is_installed("schedweb.scheduling"):
        return None
    try:
        return apps.get_model("scheduling", name)
    except LookupError:
        return None


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
    model = _model("CycleRun")
    if model is None:
        return CycleHealth(None, None, None, {}, {}, 0, 0, "", None)
    last = model.objects.filter(skipped=False).order_by("-started").first()
    since = timezone.now() - window
    recent = model.objects.filter(started__gte=since)
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


def latest_samples() -> dict[str, dict[str, Any]]:
    """Per queue name, the newest cycle's figures (schedweb.scheduling.selectors.latest_samples)."""
    if _model("QueueSample") is None:
        return {}
    from schedweb.scheduling.selectors import latest_samples as shared

    return shared()


def sample_history(queue_name: str, since: datetime | None, limit: int = 2000) -> list[dict[str, Any]]:
    """The queue's samples since `since` (oldest first, at most `limit` newest): time and figures."""
    model = _model("QueueSample")
    if model is None:
        return []
    qs = model.objects.filter(queue=queue_name)
    if since is not None:
        qs = qs.filter(created__gte=since)
    rows = list(qs.order_by("-created", "-id").values("created", "deserved", "allocated", "request",
                                                      "guarantee", "real_capability")[:limit])
    rows.reverse()
    return [{"time": r.pop("created"), **r} for r in rows]


def reason_history(job_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """The job's reason timeline, oldest first: code, message, first_seen, last_seen."""
    model = _model("JobReasonHistory")
    if model is None:
        return []
    rows = list(model.objects.filter(job_id=job_id).order_by("-id").values(
        "code", "message", "first_seen", "last_seen")[:limit])
    rows.reverse()
    return rows

"""The scheduler part of /healthz: age of the last cycle, "degraded" past five periods."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from schedweb.scheduling.models import CycleRun

STALE_PERIODS = 5


def scheduler_health() -> dict:
    """{"state": ok|degraded, "last_cycle", "last_cycle_age_seconds", ...}; {"state": "unknown"}
    before the first cycle. Skipped cycles do not count: they mean another leader is working."""
    row = (CycleRun.objects.filter(skipped=False).order_by("-started", "-id")
           .values_list("started", "duration_seconds", "errors").first())
    if row is None:
        return {"state": "unknown"}
    started, duration, errors = row
    period = float(settings.SCHEDULE_PERIOD)
    age = max(0.0, (timezone.now() - started).total_seconds() - duration)
    stale = age > STALE_PERIODS * period
    return {"state": "degraded" if stale or errors else "ok", "last_cycle": started.isoformat(),
            "last_cycle_age_seconds": round(age, 3), "period_seconds": period,
            "last_cycle_error": errors or None}

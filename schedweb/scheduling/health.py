"""The scheduler part of /healthz: degraded when cycles stop, or when cycles or the agent keep failing.

- stale: the last cycle is older than STALE_PERIODS periods (the loop has stopped);
- failing: the latest cycle failed, or at least REPEATED of the last WINDOW cycles did (a loop
  that fails every other cycle is not healthy either); the same for the simulated agent's steps.
A job set aside for bad data (InvalidJob) is not a failure: the cycle ran for everybody else.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from schedweb.scheduling.models import CycleRun

STALE_PERIODS = 5
WINDOW = 5
REPEATED = 2


def _failing(errors: list[str]) -> bool:
    return bool(errors) and (bool(errors[0]) or sum(1 for e in errors if e) >= REPEATED)


def scheduler_health() -> dict:
    """{"state": ok|degraded, "last_cycle", "last_cycle_age_seconds", ...}; {"state": "unknown"}
    before the first cycle. Skipped cycles do not count: they mean another leader is working."""
    rows = list(CycleRun.objects.filter(skipped=False).order_by("-started", "-id")
                .values_list("started", "duration_seconds", "errors", "agent_error", "job_errors")[:WINDOW])
    if not rows:
        return {"state": "unknown"}
    started, duration, errors, _, job_errors = rows[0]
    period = float(settings.SCHEDULE_PERIOD)
    age = max(0.0, (timezone.now() - started).total_seconds() - duration)
    stale = age > STALE_PERIODS * period
    cycle_errors = [row[2] for row in rows]
    agent_errors = [row[3] for row in rows]
    degraded = stale or _failing(cycle_errors) or _failing(agent_errors)
    return {"state": "degraded" if degraded else "ok", "last_cycle": started.isoformat(),
            "last_cycle_age_seconds": round(age, 3), "period_seconds": period,
            "last_cycle_error": errors or None,
            "recent_cycle_failures": sum(1 for e in cycle_errors if e),
            "recent_agent_failures": sum(1 for e in agent_errors if e),
            "last_agent_error": next((e for e in agent_errors if e), None),
            "jobs_set_aside": job_errors}

"""The scheduler part of /healthz: down when no cycle has succeeded for a while, degraded when
cycles or the agent keep failing.

- down (the probe answers 503): no cycle has succeeded for STALE_PERIODS periods: the last
  success ended longer ago than that, or none ever did and the first cycle started longer ago
  (the loop has stopped, or every cycle fails, or the database keeps it from recording any);
- failing (degraded, still 200): the latest cycle failed, or at least REPEATED of the last WINDOW
  cycles did (a loop that fails every other cycle is not healthy either); the same for the
  simulated agent's steps.
A job set aside for bad data (InvalidJob) is not a failure: the cycle ran for everybody else.
Before the first cycle the state is "unknown" (200: a web server may start before its scheduler).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from schedweb.scheduling.models import CycleRun

STALE_PERIODS = 5
WINDOW = 5
REPEATED = 2
DOWN, DEGRADED, OK, UNKNOWN = "down", "degraded", "ok", "unknown"


def _failing(errors: list[str]) -> bool:
    return bool(errors) and (bool(errors[0]) or sum(1 for e in errors if e) >= REPEATED)


_RANK = {OK: 0, UNKNOWN: 1, DEGRADED: 2, DOWN: 3}


def scheduler_health() -> dict:
    """{"state": ok|degraded|down, "last_cycle", "last_cycle_age_seconds", "last_success",
    "last_success_age_seconds", ...}; {"state": "unknown"} before the first cycle. Skipped cycles
    do not count: they mean another leader is working. Three queries at most, none over the
    history (the newest rows by the `started` index).

    With SCHEDULER_SHARDS set, each shard's instance is judged on its own cycles (`"shards":
    {name: {...}}`) and the state is the worst of them: one shard's stopped worker leaves its
    nodes and jobs unscheduled however well the others run."""
    shards = list(getattr(settings, "SCHEDULER_SHARDS", []))
    if not shards:
        return _instance_health(CycleRun.objects.filter(skipped=False))
    each = {name: _instance_health(CycleRun.objects.filter(skipped=False, shard=name)) for name in shards}
    worst = max(each.values(), key=lambda h: _RANK[h["state"]])
    return {**worst, "shards": each}


def _instance_health(ran) -> dict:
    """The health of one instance from its cycle rows `ran` (a queryset of non-skipped runs)."""
    rows = list(ran.order_by("-started", "-id")
                .values_list("started", "duration_seconds", "errors", "agent_error", "job_errors")[:WINDOW])
    if not rows:
        return {"state": UNKNOWN}
    now = timezone.now()
    started, duration, errors, _, job_errors = rows[0]
    period = float(settings.SCHEDULE_PERIOD)
    age = max(0.0, (now - started).total_seconds() - duration)
    success = (ran.filter(errors="").order_by("-started", "-id").values_list("started", "duration_seconds")
               .first())
    if success is not None:
        success_age = max(0.0, (now - success[0]).total_seconds() - success[1])
    else:  # none ever succeeded: down once the first attempt is that old
        first = ran.order_by("started", "id").values_list("started", flat=True).first()
        success_age = max(0.0, (now - first).total_seconds())
    cycle_errors = [row[2] for row in rows]
    agent_errors = [row[3] for row in rows]
    if success_age > STALE_PERIODS * period:
        state = DOWN
    elif _failing(cycle_errors) or _failing(agent_errors):
        state = DEGRADED
    else:
        state = OK
    return {"state": state, "last_cycle": started.isoformat(),
            "last_cycle_age_seconds": round(age, 3), "period_seconds": period,
            "last_success": success[0].isoformat() if success else None,
            "last_success_age_seconds": round(success_age, 3),
            "last_cycle_error": errors or None,
            "recent_cycle_failures": sum(1 for e in cycle_errors if e),
            "recent_agent_failures": sum(1 for e in agent_errors if e),
            "last_agent_error": next((e for e in agent_errors if e), None),
            "jobs_set_aside": job_errors}

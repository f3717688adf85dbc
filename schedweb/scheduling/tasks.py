"""Celery tasks: the periodic scheduling cycle (plus the simulated agent when enabled); every
FORECAST_EVERY_CYCLES-th cycle also sends the forecast (schedweb.scheduling.forecast_task) to
Celery's default queue."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from schedweb.scheduling import cycle_metrics, demo_arrivals, forecast_task
from schedweb.scheduling.agent import agent_step, report_heartbeats
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun

logger = logging.getLogger(__name__)


def cycle_and_agent(shard: str = "") -> dict:
    """One cycle of the instance `shard` ("" = unsharded), then one agent step when
    SIMULATED_AGENT is on, then a demo arrival when DEMO_ARRIVALS is on and one is due; a
    summary for logs."""
    run = cycle_run(shard=shard)
    out = {"cycle": run.pk, "skipped": run.skipped, "binds": run.binds, "evictions": run.evictions,
           "conflicts": run.conflicts, "errors": run.errors}
    if shard:
        out["shard"] = shard
    if settings.SIMULATED_AGENT and not run.skipped:
        try:
            step = agent_step()
            step.heartbeats = report_heartbeats(timezone.now())  # after the step commits
        except Exception as exc:  # recorded on the cycle (health counts them); the loop goes on
            logger.exception("simulated agent step failed")
            error = f"{type(exc).__name__}: {exc}"[:2000]
            with transaction.atomic():
                CycleRun.objects.filter(pk=run.pk).update(agent_error=error)
                cycle_metrics.record_agent_failure()
            out["agent_error"] = error
            return out
        out["agent"] = {"started": step.started, "succeeded": step.succeeded, "released": step.released,
                        "completed_jobs": step.completed_jobs, "heartbeats": step.heartbeats}
    if settings.DEMO_ARRIVALS and not run.skipped:
        try:
            job = demo_arrivals.arrive(run)
        except Exception:  # the demo's arrivals never stop the loop
            logger.exception("demo arrival failed")
        else:
            if job is not None:
                out["arrived"] = job.uid
    return out


@shared_task(name="schedweb.scheduling.cycle", ignore_result=True)
def scheduling_cycle(shard: str = "") -> dict:
    """Beat entry point (every SCHEDULE_PERIOD seconds, expires after one period): the unsharded
    instance on queue `scheduler`, or shard `shard`'s on `scheduler-<shard>` (schedweb.celery)."""
    out = cycle_and_agent(shard)
    # After the cycle has committed; sent, never run here, and never raises.
    if sent := forecast_task.after_cycle(out, inline=False):
        out["forecast"] = sent
    return out

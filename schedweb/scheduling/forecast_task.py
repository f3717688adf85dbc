"""Estimated start of every waiting job, computed off the scheduling path (issue 20).

`run_forecast()` loads the cluster as a cycle would (a fresh `adapter.load_state`: the cycle's
kept snapshot carries its session's in-memory changes until its next load), takes the active
configuration, and runs `scheduler_core.forecast.forecast` forward from it: tasks end at
`started + duration`, or, without a declared duration, after the median runtime of their queue's
recently finished tasks (`queue_runtime_estimates`), evicted tasks keep their node for two
periods (the simulated agent's grace). Each waiting job's `estimated_start` and
`estimate_basis` replace the previous run's JobForecast rows in one transaction; a ForecastRun
row records the run. It runs after every FORECAST_EVERY_CYCLES-th cycle (`after_cycle`): as a
Celery task on the default `celery` queue (never the cycle's own `scheduler` queue), or in the
process for `manage.py run_scheduler`; `manage.py forecast` runs it once.

On a sharded cluster (NodeShard rows) every simulated cycle runs one session per scheduler
instance that cycles here (`instance_shardings`: each of SCHEDULER_SHARDS, else the default
instance alone), each placing only the jobs routed to it, on its shard's nodes in its mode, as
the instances' own cycles would.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from scheduler_core.forecast import Forecast, forecast
from scheduler_core.framework.sharding import Sharding
from schedweb.core.models import Job, JobPhase, Task, TaskStatus
from schedweb.scheduling import shard_runtime
from schedweb.scheduling.adapter import LoadedState, load_state
from schedweb.scheduling.cycle import active_conf, with_rescheduling_last_run
from schedweb.scheduling.models import ForecastRun, JobForecast

logger = logging.getLogger(__name__)

TASK_NAME = "schedweb.scheduling.forecast"
FORECAST_QUEUE = "celery"  # Celery's default queue: the cycle's `scheduler` queue stays free
LOCK_KEY = 0x5EDF0CA5  # pg_advisory_xact_lock key serialising the stores of concurrent runs
HISTORY_DAYS = 7  # finished tasks older than this say nothing about a queue's runtime now
KEEP_RUNS = 20  # ForecastRun rows kept


def _stamp(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds is not None else None


def queue_runtime_estimates(now: datetime | None = None, limit: int | None = None) -> dict[str, float]:
    """Queue name -> median runtime in seconds of its newest `limit` (FORECAST_HISTORY_TASKS)
    Succeeded tasks of Completed jobs that finished in the last HISTORY_DAYS days."""
    now = now or timezone.now()
    limit = int(settings.FORECAST_HISTORY_TASKS if limit is None else limit)
    if limit <= 0:
        return {}
    rows = (Task.objects.filter(status=TaskStatus.SUCCEEDED, job__phase=JobPhase.COMPLETED,
                                started__isnull=False, finished__isnull=False,
                                finished__gte=now - timedelta(days=HISTORY_DAYS))
            .annotate(rank=Window(RowNumber(), partition_by=[F("job__queue_id")],
                                  order_by=[F("finished").desc(), F("id").desc()]))
            .filter(rank__lte=limit)
            .values_list("job__queue__name", "started", "finished"))
    runtimes: dict[str, list[float]] = {}
    for queue, started, finished in rows:
        seconds = (finished - started).total_seconds()
        if seconds >= 0:
            runtimes.setdefault(queue, []).append(seconds)
    return {queue: float(statistics.median(values)) for queue, values in sorted(runtimes.items())}


def _round_starts(state: LoadedState) -> None:
    # SQLite's loader reads timestamps through julianday(), a double of days: up to ~40 us off, so
    # a task started on a whole second and declaring whole seconds would end just after a cycle
    # instant and be seen one cycle late. Milliseconds are what the estimates can mean anyway.
    for job in state.snapshot.jobs.values():
        for task in job.tasks.values():
            if task.started is not None:
                task.started = round(task.started, 3)


def instance_shardings(state: LoadedState) -> tuple[Sharding, ...]:
    """The Sharding of every scheduler instance whose cycles run (SCHEDULER_SHARDS' shards, else
    the default instance), over `state`; () on an unsharded cluster (no NodeShard row)."""
    out = []
    for name in list(getattr(settings, "SCHEDULER_SHARDS", [])) or [""]:
        try:
            instance = shard_runtime.resolve(name)
        except shard_runtime.ShardMissing:  # a configured shard without its row: it places nothing
            continue
        sharding = instance.sharding_for(state.snapshot, state)
        if sharding is None:
            return ()
        out.append(sharding)
    return tuple(out)


def compute(state: LoadedState, now: datetime, *, estimates: Mapping[str, float] | None = None,
            conf: Any = None, cpu_budget_s: float | None = None) -> Forecast:
    """The forecast of a loaded state at `now` with the active configuration (or `conf`); the
    snapshot is handed over (changed in place). Settings give the horizon, step and CPU budgets."""
    shardings = instance_shardings(state)
    if conf is None:
        _, conf = active_conf()
        conf, _ = with_rescheduling_last_run(conf, now.timestamp())
    if connection.vendor == "sqlite":
        _round_starts(state)
    period = float(settings.SCHEDULE_PERIOD)
    budget = float(settings.FORECAST_CPU_BUDGET_S) if cpu_budget_s is None else cpu_budget_s
    return forecast(state.snapshot, conf, now=now.timestamp(), horizon_s=float(settings.FORECAST_HORIZON_S),
                    max_steps=int(settings.FORECAST_MAX_STEPS), cpu_budget_s=budget if budget > 0 else None,
                    runtime_estimates=estimates, period=period, release_grace_s=2 * period, copy=False,
                    shardings=shardings)


def store(fc: Forecast, job_ids: Mapping[str, int], now: datetime, run: ForecastRun) -> bool:
    """Replace every JobForecast row with this forecast's (one transaction) and save `run`.
    False (nothing stored) when a newer forecast was stored meanwhile."""
    until = _stamp(fc.until) or now
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        if ForecastRun.objects.filter(computed_at__gt=now, errors="").exists():
            return False
        wanted = {job_ids[uid]: answer for uid, answer in fc.jobs.items() if uid in job_ids}
        # Jobs deleted since the load have no row to point to.
        alive = set(Job.objects.filter(pk__in=list(wanted)).values_list("pk", flat=True))
        JobForecast.objects.all().delete()
        JobForecast.objects.bulk_create(
            [JobForecast(job_id=pk, estimated_start=_stamp(answer.estimated_start),
                         estimate_basis=str(answer.estimate_basis), computed_at=now, until=until)
             for pk, answer in sorted(wanted.items()) if pk in alive], batch_size=2000)
        run.save()
        newest = ForecastRun.objects.order_by("-computed_at", "-id").values_list("pk", flat=True)
        old = list(newest[KEEP_RUNS:])
        if old:
            ForecastRun.objects.filter(pk__in=old).delete()
    return True


def run_forecast(*, now: datetime | None = None) -> ForecastRun:
    """Load, forecast, store; a failure is logged and recorded on the run (errors), never raised."""
    now = now or timezone.now()
    run = ForecastRun(computed_at=now)
    t0 = time.perf_counter()
    try:
        _, conf = active_conf()
        conf, _ = with_rescheduling_last_run(conf, now.timestamp())
        state = load_state(now)
        estimates = queue_runtime_estimates(now)
        job_ids = {uid: row.id for uid, row in state.jobs.items()}
        t1 = time.perf_counter()
        fc = compute(state, now, estimates=estimates, conf=conf)
        del state  # the simulated snapshot's memory goes before the write
        t2 = time.perf_counter()
        run.until, run.cycles, run.stop, run.jobs = _stamp(fc.until), fc.cycles, fc.stop, len(fc.jobs)
        run.load_seconds, run.forecast_seconds, run.cpu_seconds = t1 - t0, t2 - t1, fc.cpu_s
        stored = store(fc, job_ids, now, run)
        run.store_seconds = time.perf_counter() - t2
        if stored:
            ForecastRun.objects.filter(pk=run.pk).update(store_seconds=run.store_seconds)
        return run
    except Exception as exc:  # recorded; the scheduler loop that called it goes on
        logger.exception("forecast failed")
        run.errors = f"{type(exc).__name__}: {exc}"[:2000]
        run.pk = None
        try:
            run.save()
        except Exception:  # the database itself is gone: the log line above is all we can do
            logger.exception("forecast failure could not be recorded")
        return run


def summary(run: ForecastRun) -> dict[str, Any]:
    """A run as a dict for logs and the command line."""
    return {"forecast": run.pk, "computed_at": run.computed_at.isoformat(),
            "until": run.until.isoformat() if run.until else None, "jobs": run.jobs, "cycles": run.cycles,
            "stop": run.stop, "load_s": round(run.load_seconds, 3),
            "forecast_s": round(run.forecast_seconds, 3), "cpu_s": round(run.cpu_seconds, 3),
            "store_s": round(run.store_seconds, 3), "errors": run.errors}


@shared_task(name=TASK_NAME, ignore_result=True)
def forecast_jobs() -> dict[str, Any]:
    """Celery entry point (sent by `after_cycle` to the default queue)."""
    return summary(run_forecast())


def due(cycle_id: int | None) -> bool:
    """Whether the cycle with this CycleRun id is one after which a forecast runs: every
    FORECAST_EVERY_CYCLES-th cycle id (0 turns forecasts off)."""
    every = int(settings.FORECAST_EVERY_CYCLES)
    return bool(cycle_id) and every > 0 and int(cycle_id) % every == 0


def after_cycle(cycle: Mapping[str, Any], *, inline: bool) -> str | None:
    """After a cycle (its summary from tasks.cycle_and_agent): when due, run the forecast here
    (`inline`, run_scheduler without a broker) or send it to Celery's default queue, without
    retries, so a broker problem never holds the cycle's worker. Returns what it did, else None."""
    if cycle.get("skipped") or cycle.get("errors") or not due(cycle.get("cycle")):
        return None
    if inline:
        return "failed" if run_forecast().errors else "ran"
    every = int(settings.FORECAST_EVERY_CYCLES)
    try:
        # Stale after K periods: the next due cycle sends a fresh one.
        forecast_jobs.apply_async(queue=FORECAST_QUEUE, expires=every * float(settings.SCHEDULE_PERIOD),
                                  retry=False)
    except Exception:
        logger.exception("forecast task not sent")
        return "not sent"
    return "sent"

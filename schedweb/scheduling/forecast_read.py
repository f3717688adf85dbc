"""Reading stored forecasts: one job's estimate as the API and the pages show it.

    forecast_fields(job)       # {"estimated_start", "estimate_basis", "sentence", "computed_at", "until"}
    forecasts_for([job, ...])  # the same for many jobs: two queries in all

The sentence is relative to the time of the request ("expected to start in about 25 min, if
running jobs end as declared"), the instants are absolute (ISO 8601, UTC). A job that is no
longer waiting says so instead of showing an old estimate (a job that was there at the newest
forecast without an estimate was not waiting then); a job submitted after it has none yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from scheduler_core.forecast import Basis, JobForecast, describe
from schedweb.core.models import Job, JobPhase
from schedweb.scheduling.models import ForecastRun
from schedweb.scheduling.models import JobForecast as JobForecastRow

FINISHED = {JobPhase.COMPLETED: "the job has finished", JobPhase.CANCELLED: "the job was cancelled"}
STARTED = "the job has started"
NOT_YET = "no estimate yet: the job arrived after the newest forecast"
NO_FORECAST = "no estimate: no forecast has run yet"


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value is not None else None


def sentence(row: JobForecastRow, now: datetime) -> str:
    """The stored estimate in words, relative to `now`."""
    try:
        basis = Basis(row.estimate_basis)
    except ValueError:  # a basis this code does not know (a newer engine wrote it)
        return f"estimate basis {row.estimate_basis}"
    start = row.estimated_start.timestamp() if row.estimated_start is not None else None
    return describe(JobForecast(start, basis), now.timestamp(), row.until.timestamp())


def fields(job: Job, row: JobForecastRow | None, last_run: ForecastRun | None,
           now: datetime) -> dict[str, Any]:
    """One job's forecast fields (see the module docstring)."""
    out: dict[str, Any] = {"estimated_start": None, "estimate_basis": None, "sentence": "",
                           "computed_at": _iso(last_run.computed_at) if last_run else None, "until": None}
    if job.phase in FINISHED:
        out["sentence"] = FINISHED[JobPhase(job.phase)]
    elif job.phase == JobPhase.RUNNING:
        out["sentence"] = STARTED
    elif row is not None:
        out.update(estimated_start=_iso(row.estimated_start), estimate_basis=row.estimate_basis,
                   sentence=sentence(row, now), computed_at=_iso(row.computed_at), until=_iso(row.until))
    elif last_run is None:
        out["sentence"] = NO_FORECAST
    elif job.created <= last_run.computed_at:
        out["sentence"] = STARTED  # there at the newest forecast, and not waiting then
    else:
        out["sentence"] = NOT_YET
    return out


def latest_run() -> ForecastRun | None:
    """The newest forecast that completed."""
    return ForecastRun.objects.filter(errors="").order_by("-computed_at", "-id").first()


def forecasts_for(jobs: Iterable[Job], now: datetime | None = None) -> dict[int, dict[str, Any]]:
    """Job id -> forecast fields, for jobs (id, phase and created are read)."""
    jobs = list(jobs)
    now = now or timezone.now()
    rows = {r.job_id: r for r in JobForecastRow.objects.filter(job_id__in=[j.pk for j in jobs])}
    last = latest_run()
    return {job.pk: fields(job, rows.get(job.pk), last, now) for job in jobs}


def forecast_fields(job: Job, now: datetime | None = None) -> dict[str, Any]:
    """One job's forecast fields (for the job detail: `{**detail, **forecast_fields(job)}`)."""
    return forecasts_for([job], now)[job.pk]

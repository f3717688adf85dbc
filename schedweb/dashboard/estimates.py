"""Estimated start times on the job pages (issue 20): the stored forecast in words, with its basis.

The figures are the forecast's (schedweb.scheduling.forecast_read: `forecast_fields`,
`forecasts_for`); this module only adds what a page shows around them: a label and an
explanation per `estimate_basis` (the tooltip and the legend) and the estimate as a datetime.
A list page reads every estimate of its page at once (`with_estimates`: two queries in all).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from schedweb.core.choices import WAITING_JOB_PHASES
from schedweb.core.models import Job
from schedweb.scheduling.forecast_read import forecast_fields, forecasts_for

# estimate_basis -> (label, what it means): the legend's rows and each estimate's tooltip.
BASES: dict[str, tuple[str, str]] = {
    "declared": ("declared durations",
                 "Every running job it waits for declared its duration: it ends at its start plus that."),
    "history": ("queue history",
                "Some running jobs declared no duration: each is taken to run as long as the median of "
                "its queue's recently finished tasks."),
    "unknown": ("unknown",
                "It waits for running jobs that declared no duration, in queues with no recent history: "
                "nobody knows when they end."),
    "beyond_horizon": ("beyond the horizon",
                       "The forecast ran the scheduler forward to its horizon (a day of cycles or its step "
                       "budget) and the job had not started by then."),
    "never": ("never",
              "It cannot run as the cluster stands (it never fits, is invalid, or its queue is closed): "
              "waiting does not help."),
}
NO_BASIS = ("no estimate",
            "No forecast has estimated this job yet (forecasts run every few scheduling cycles).")


def basis_label(basis: str | None) -> str:
    """A short label for an estimate basis ("declared durations", ...)."""
    if not basis:
        return NO_BASIS[0]
    return BASES[basis][0] if basis in BASES else basis  # a basis a newer engine wrote


def basis_help(basis: str | None) -> str:
    """What an estimate basis means, in one or two sentences (the tooltip)."""
    if not basis:
        return NO_BASIS[1]
    return BASES[basis][1] if basis in BASES else f"Estimate basis {basis}."


def legend() -> list[dict[str, str]]:
    """The legend's rows: every basis with its label and meaning, in the order of BASES."""
    return [{"basis": key, "label": label, "help": text} for key, (label, text) in BASES.items()]


def present(fields: dict[str, Any]) -> dict[str, Any]:
    """forecast_read's fields plus `label`, `help` and the datetimes `at`, `computed`, `horizon`."""

    def when(value: str | None) -> datetime | None:
        return parse_datetime(value) if value else None

    return {**fields, "label": basis_label(fields.get("estimate_basis")),
            "help": basis_help(fields.get("estimate_basis")), "at": when(fields.get("estimated_start")),
            "computed": when(fields.get("computed_at")), "horizon": when(fields.get("until"))}


def job_estimate(job: Job) -> dict[str, Any]:
    """One job's estimate as the job page shows it (two queries)."""
    return present(forecast_fields(job))


def with_estimates(jobs: Iterable[Job]) -> list[Job]:
    """Set `estimate` (present()'s dict, None for a job that is not waiting) on each job of a page:
    the waiting ones are read in one batch (forecasts_for: two queries, none without one). A job
    is waiting as on the job page: Pending or Inqueue with a task still without a node (when the
    page counted them, `task_waiting`: a job whose tasks all have nodes is starting)."""
    jobs = list(jobs)
    waiting = [job for job in jobs if job.phase in WAITING_JOB_PHASES and getattr(job, "task_waiting", 1)]
    found = forecasts_for(waiting) if waiting else {}
    for job in jobs:
        # Not `job.forecast`: that name is JobForecast's reverse accessor on Job.
        job.estimate = present(found[job.pk]) if job.pk in found else None  # type: ignore[attr-defined]
    return jobs

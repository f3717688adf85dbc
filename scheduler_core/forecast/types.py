"""What a forecast answers: per waiting job an estimated start and the basis of that estimate."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Basis(StrEnum):
    """Why the estimate is what it is (the issue's `estimate_basis` values)."""

    DECLARED = "declared"              # every task that ended before it started declared its duration
    HISTORY = "history"                # one of them had none: it ended at its queue's typical runtime
    UNKNOWN = "unknown"                # waits on running tasks whose end nobody knows
    BEYOND_HORIZON = "beyond_horizon"  # does not start before the simulation stopped (`Forecast.until`)
    NEVER = "never"                    # cannot start as the cluster stands (NeverFits, InvalidJob, ...)


@dataclass(frozen=True, slots=True)
class JobForecast:
    """One waiting job's estimate: `estimated_start` in unix seconds (None without one)."""

    estimated_start: float | None
    estimate_basis: Basis

    def to_json(self, now: float) -> dict[str, Any]:
        """`{estimated_start, estimate_basis, start_in_s}` (start_in_s relative to the forecast's now)."""
        start = self.estimated_start
        return {"estimated_start": start, "estimate_basis": str(self.estimate_basis),
                "start_in_s": None if start is None else round(start - now, 6)}


@dataclass
class Forecast:
    """The answer for every job that was waiting at `now`, and how far the simulation went.

    `stop` says why the simulation ended: "answered" (every waiting job has its answer),
    "quiet" (nothing left to finish or change), "horizon", "max_steps" or "cpu_budget".
    `until` is the last simulated instant: a `beyond_horizon` job does not start before it.
    """

    now: float
    period: float
    jobs: dict[str, JobForecast] = field(default_factory=dict)
    until: float = 0.0
    cycles: int = 0           # sessions run
    skipped: int = 0          # event instants passed over without a session (nothing could start)
    stop: str = "answered"
    elapsed_s: float = 0.0
    cpu_s: float = 0.0

    def to_json(self) -> dict[str, dict[str, Any]]:
        """uid -> `{estimated_start, estimate_basis, start_in_s}`, sorted by uid."""
        return {uid: self.jobs[uid].to_json(self.now) for uid in sorted(self.jobs)}

    def stats_json(self) -> dict[str, Any]:
        """How the simulation went (for logs and benchmarks)."""
        return {"now": self.now, "period": self.period, "until": self.until, "cycles": self.cycles,
                "skipped": self.skipped, "stop": self.stop, "elapsed_s": round(self.elapsed_s, 6),
                "cpu_s": round(self.cpu_s, 6), "jobs": len(self.jobs)}


def _span(seconds: float) -> str:
    """`about 25 min`: a rounded duration in the largest fitting unit."""
    if seconds < 60:
        return "under a minute"
    minutes = seconds / 60
    if minutes < 90:
        return f"about {round(minutes)} min"
    hours = minutes / 60
    if hours < 48:
        return f"about {round(hours, 1):g} h"
    return f"about {round(hours / 24, 1):g} days"


def describe(job: JobForecast, now: float, horizon_until: float | None = None) -> str:
    """The sentence a user reads, e.g. "expected to start in about 25 min, if running jobs end as
    declared" (relative to `now`; `horizon_until` is Forecast.until for beyond_horizon)."""
    basis = job.estimate_basis
    if basis is Basis.NEVER:
        return "not expected to start: it cannot run on the cluster as it stands"
    if basis is Basis.UNKNOWN:
        return "start time unknown: it waits for running jobs that declared no duration"
    if basis is Basis.BEYOND_HORIZON or job.estimated_start is None:
        if horizon_until is None:
            return "not expected to start within the forecast horizon"
        return f"not expected to start within {_span(horizon_until - now).removeprefix('about ')}"
    wait = job.estimated_start - now
    when = "expected to start in the next scheduling cycle" if wait <= 0 else \
        f"expected to start in {_span(wait)}"
    if basis is Basis.HISTORY:
        return f"{when}, if running jobs take as long as recent jobs of their queues"
    return f"{when}, if running jobs end as declared"


def summary_lines(fc: Forecast, limit: int | None = None) -> list[str]:
    """The `simulate --forecast` section: one sentence per waiting job (the first `limit`), then
    how the run went."""
    lines = [f"Forecast ({len(fc.jobs)} waiting):" if fc.jobs else "Forecast: no waiting job"]
    shown = list(fc.jobs.items())[:limit]
    lines.extend(f"  {uid}: {describe(job, fc.now, fc.until)}" for uid, job in shown)
    if len(shown) < len(fc.jobs):
        lines.append(f"  ... {len(fc.jobs) - len(shown)} more (use --json for all)")
    lines.append(f"  ({fc.cycles} cycles simulated up to +{fc.until - fc.now:g}s, period {fc.period:g}s; "
                 f"stopped: {fc.stop})")
    return lines

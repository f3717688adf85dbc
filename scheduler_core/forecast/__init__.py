"""Estimated start times: the real scheduler run forward from the committed state.

    fc = forecast(snapshot, conf, now=snapshot.now, horizon_s=86400, runtime_estimates={"q1": 1800})
    fc.jobs["ns/job"]  # JobForecast(estimated_start=1767229200.0, estimate_basis=Basis.DECLARED)
    describe(fc.jobs["ns/job"], fc.now)
    # -> "expected to start in about 25 min, if running jobs end as declared"

Running tasks end at `started + duration`; no new job arrives; each simulated cycle runs
`scheduler_core.scheduler.run_session` with the given conf (its actions and plugins) on the
snapshot as the next real cycle would load it (`simulator`). Waiting jobs are those with fewer
than `min_available` tasks running; each gets `estimated_start` (the instant of the cycle that
bound its gang, on the `now + k * period` grid) and `estimate_basis` (`types.Basis`).
"""

from scheduler_core.forecast.clone import clone_snapshot
from scheduler_core.forecast.engine import NEVER_CODES, forecast, is_waiting
from scheduler_core.forecast.simulator import Simulator
from scheduler_core.forecast.types import Basis, Forecast, JobForecast, describe

__all__ = ["NEVER_CODES", "Basis", "Forecast", "JobForecast", "Simulator", "clone_snapshot", "describe",
           "forecast", "is_waiting"]

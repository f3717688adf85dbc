"""Dry run of a submission: where jobs would go in the next cycle, on the current state.

    preview_jobs(state, ["ml/train"], now=now)["ml/train"]
    # {"job": "ml/train", "placement": "bound", "nodes": {"train-0": "n1"}, "pipelined": {},
    #  "reason": None, "phase": "Inqueue", "estimated_start": "2026-...Z", "estimate_basis": "declared",
    #  "sentence": "expected to start in the next scheduling cycle, if running jobs end as declared"}

The caller writes the jobs in a transaction it rolls back (the API's dry run,
schedweb.api.job_dry_run, or the manifest import's, which uses `preview_stored_jobs`) and loads
the state there, exactly as the next cycle will load it. The next cycle's session then runs in
memory on that state; `placement` is "bound" when some of the job's tasks are bound, "never" when
its reason is one no cycle can lift (NeverFits, InvalidJob, QueueClosed), else "pending" with the
reason. A pending job also gets the forecast's estimated start (scheduler_core.forecast; CPU
budget FORECAST_CPU_BUDGET_S).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from scheduler_core.forecast import NEVER_CODES, Basis, Forecast, JobForecast, clone_snapshot, describe
from scheduler_core.framework.conf import SchedulerConf
from scheduler_core.result import SessionResult
from scheduler_core.scheduler import run_session_isolated
from schedweb.scheduling import forecast_task
from schedweb.scheduling.adapter import LoadedState, load_state
from schedweb.scheduling.cycle import active_conf, with_rescheduling_last_run

logger = logging.getLogger(__name__)

BOUND, PENDING, NEVER = "bound", "pending", "never"


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def preview_conf(now: datetime) -> SchedulerConf:
    """The active configuration as the next cycle will run it (rescheduling's last run stamped)."""
    _, conf = active_conf()
    conf, _ = with_rescheduling_last_run(conf, now.timestamp())
    return conf


def placement_of(uid: str, state: LoadedState, result: SessionResult) -> dict[str, Any]:
    """The next cycle's decision for job `uid` of the session on `state`: placement, nodes by task
    name (bound and pipelined), the reason (code, message, details) and the job's phase."""
    job = state.snapshot.jobs.get(uid)
    names = {t.uid: t.name for t in job.tasks.values()} if job is not None else {}
    nodes = {names[t]: node for t, node in sorted(result.binds.items()) if t in names}
    pipelined = {names[t]: node for t, node in sorted(result.pipelined.items()) if t in names}
    reason = result.reasons.get(uid)
    reason_json = reason.to_json() if reason is not None else None
    if nodes:
        placement = BOUND
    elif reason_json is not None and reason_json["code"] in NEVER_CODES:
        placement = NEVER
    else:
        placement = PENDING
    phase = result.job_phase.get(uid)
    return {"job": uid, "placement": placement, "nodes": nodes, "pipelined": pipelined, "reason": reason_json,
            "phase": str(phase) if phase is not None else None}


def _estimate(entry: dict[str, Any], fc: Forecast | None, now: float) -> None:
    """Add estimated_start, estimate_basis and the sentence to a placement entry."""
    if entry["placement"] == BOUND:
        start, basis = now, "declared"  # bound in the next cycle: starts with it, whatever runs
    elif entry["placement"] == NEVER:
        start, basis = None, "never"
    else:
        answer = fc.jobs.get(entry["job"]) if fc is not None else None
        if answer is None:
            entry.update(estimated_start=None, estimate_basis=None, sentence="no estimate")
            return
        start, basis = answer.estimated_start, str(answer.estimate_basis)
    until = fc.until if fc is not None else None
    entry.update(estimated_start=_iso(start), estimate_basis=basis,
                 sentence=describe(JobForecast(start, Basis(basis)), now, until))


def preview_jobs(state: LoadedState, uids: Iterable[str], *, now: datetime,
                 conf: SchedulerConf | None = None, estimates: Mapping[str, float] | None = None,
                 ) -> dict[str, dict[str, Any]]:
    """Run the next cycle's session on (a copy of) `state` and, when one of `uids` would wait, the
    forecast on `state` itself (handed over). Job uid -> placement entry with its estimate."""
    conf = conf or preview_conf(now)
    base = state.snapshot
    _, result = run_session_isolated(lambda: clone_snapshot(base), conf)
    out = {uid: placement_of(uid, state, result) for uid in uids}
    fc = None
    if any(entry["placement"] == PENDING for entry in out.values()):
        if estimates is None:
            estimates = forecast_task.queue_runtime_estimates(now)
        fc = forecast_task.compute(state, now, estimates=estimates, conf=conf)
    for entry in out.values():
        _estimate(entry, fc, now.timestamp())
    return out


def preview_stored_jobs(uids: Iterable[str], *, now: datetime | None = None) -> dict[str, dict[str, Any]]:
    """The placement entries of jobs already written in the caller's transaction (the manifest
    import's dry run, which rolls everything back afterwards). A failure is logged and reported as
    `{"error": ...}` per job: a preview never makes the dry run fail."""
    uids = list(uids)
    now = now or timezone.now()
    try:
        return preview_jobs(load_state(now), uids, now=now)
    except Exception as exc:
        logger.exception("submission preview failed")
        return {uid: {"job": uid, "error": f"{type(exc).__name__}: {exc}"} for uid in uids}

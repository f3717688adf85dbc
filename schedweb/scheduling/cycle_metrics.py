"""What each cycle adds to /metrics' totals (schedweb.scheduling.metrics_latency), in its transaction.

- a successful cycle: `schedweb_cycles{outcome="ok"}`, conflicts, Volcano's schedule attempts
  (scheduled = tasks bound, unschedulable = jobs left waiting), its duration (e2e latency and
  `schedweb_cycle_duration_seconds`), each action's and plugin callback's time from the session's
  timing, and per bound task (only the binds written) the wait from the task's creation
  (`volcano_task_scheduling_latency_milliseconds`), per job whose first tasks it bound the wait
  from the job's creation (`volcano_e2e_job_scheduling_latency_milliseconds`), the evictions it
  wrote (`volcano_eviction_transactions_total`), the time to open its session (snapshot, screen
  and plugin opens: `volcano_open_session_duration_milliseconds`) and each stage's time
  (`volcano_scheduling_stage_duration_milliseconds{stage}`, from the cycle's own timing), the
  preemption attempts its session counted (`volcano_total_preemption_attempts`); besides, its
  per-job gauges for the body rendered next (schedweb.scheduling.metrics_jobs);
- a skipped cycle (another leader): `outcome="skipped"`;
- a failed cycle: `outcome="failed"` and attempts `result="error"`, with the failure's record;
- a failed simulated agent step: `schedweb_agent_failures`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime

from scheduler_core.model import JobInfo, JobPhase, TaskStatus
from scheduler_core.result import SessionResult
from schedweb.core.models import UNSCHEDULED_JOB_PHASES
from schedweb.scheduling import metric_totals, metrics_body, metrics_jobs
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.metrics_latency import (
    ACTION,
    AGENT_FAILURES,
    ATTEMPTS,
    CONFLICTS,
    CYCLE_DURATION,
    CYCLES,
    E2E,
    EVICTIONS,
    JOB_E2E,
    ON_SESSION,
    OPEN_SESSION,
    PLUGIN,
    PREEMPTION_ATTEMPTS,
    STAGE,
    TASK,
)
from schedweb.scheduling.models import CycleRun

ACTION_KEY = re.compile(r"^action_(?P<action>.+)_s$")
PLUGIN_KEY = re.compile(r"^plugin_(?P<plugin>.+)_(?P<when>open|close)_s$")
# A job with a task in one of these before the cycle had started already: not its first bind.
COMPLETED = JobPhase.COMPLETED.value
PREEMPTION_ATTEMPTS_KEY = "preemption_attempts"  # SessionResult.counters (the preempt action)
_UNSCHEDULED = frozenset(str(phase) for phase in UNSCHEDULED_JOB_PHASES)  # plain text: a hash lookup
STARTED_BEFORE = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING,
                            TaskStatus.RELEASING, TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def record_session(run: CycleRun, state: LoadedState, result: SessionResult, applied: set[int],
                   now: datetime) -> None:
    """Everything a successful cycle adds (record_cycle with its waits), its session's preemption
    attempts, and the per-job gauges of the body rendered after it (metrics_jobs)."""
    bound = bound_jobs(state, result, applied)
    task_ms, job_ms = waits(state, result, applied, now, bound)
    record_cycle(run, task_ms, job_ms, preemption_attempts=result.counters.get(PREEMPTION_ATTEMPTS_KEY, 0))
    # The rows are the context the series judge jobs in: the kept snapshot's own, from one cycle
    # to the next, unless this instance sees a copy of its own jobs (shard_runtime.own_state).
    metrics_jobs.SERIES.record(run.pk, state.snapshot.jobs, scheduled(state, result), result, bound,
                               now.timestamp(), context=state.jobs)


def scheduled(state: LoadedState, result: SessionResult) -> Callable[[str, JobInfo], bool]:
    """Whether a snapshot's job is one this instance still schedules: not stored finished,
    cancelled or suspended (such a job is loaded only while a task of it holds a node), nor
    completed by this session, nor another instance's (shard_runtime.own_state leaves their
    rows out)."""
    rows, phases = state.jobs, result.job_phase

    def test(uid: str, job: JobInfo) -> bool:
        row = rows.get(uid)
        return row is not None and row.phase not in _UNSCHEDULED and phases.get(uid) != COMPLETED
    return test


def scheduled_jobs(state: LoadedState, result: SessionResult) -> list[JobInfo]:
    """The snapshot's jobs this instance still schedules (`scheduled`)."""
    test = scheduled(state, result)
    return [job for uid, job in state.snapshot.jobs.items() if test(uid, job)]


def record_cycle(run: CycleRun, task_waits_ms: Iterable[float] = (),
                 job_waits_ms: Iterable[float] = (), preemption_attempts: int = 0) -> None:
    """Add a successful cycle's figures (its CycleRun as saved, timing and duration included)."""
    totals = metric_totals.Totals()
    totals.count(PREEMPTION_ATTEMPTS.name, preemption_attempts)
    totals.count(CYCLES.name, labels={"outcome": "ok"})
    totals.count(CONFLICTS.name, run.conflicts)
    totals.count(ATTEMPTS.name, run.binds, {"result": "scheduled"})
    totals.count(ATTEMPTS.name, run.pending_jobs, {"result": "unschedulable"})
    totals.count(ATTEMPTS.name, 0, {"result": "error"})
    totals.count(EVICTIONS.name, run.evictions)
    totals.observe(CYCLE_DURATION.name, CYCLE_DURATION.bounds, run.duration_seconds)
    totals.observe(E2E.name, E2E.bounds, run.duration_seconds * 1e3)
    for key, seconds in sorted((run.timing or {}).items()):
        if not isinstance(seconds, int | float):
            continue
        if m := ACTION_KEY.match(key):
            totals.observe(ACTION.name, ACTION.bounds, seconds * 1e3, {"action": m["action"]})
        elif m := PLUGIN_KEY.match(key):
            totals.observe(PLUGIN.name, PLUGIN.bounds, seconds * 1e3,
                           {"plugin": m["plugin"], "OnSession": ON_SESSION[m["when"]]})
    stages = stages_ms(run)
    for stage, ms in stages.items():
        totals.observe(STAGE.name, STAGE.bounds, ms, {"stage": stage})
    # Volcano's OpenSession takes the cache's snapshot, then opens the plugins.
    totals.observe(OPEN_SESSION.name, OPEN_SESSION.bounds, stages["snapshot"] + stages["open_session"])
    for ms in task_waits_ms:
        totals.observe(TASK.name, TASK.bounds, ms)
    for ms in job_waits_ms:
        totals.observe(JOB_E2E.name, JOB_E2E.bounds, ms)
    totals.apply()


def stages_ms(run: CycleRun) -> dict[str, float]:
    """A successful cycle's stages in milliseconds, from its own measurements: snapshot (the
    load), open_session (screening and every plugin's OnSessionOpen), actions, close_session (the
    rest of the session: dispatch, OnSessionClose, reasons) and write. close_session only when the
    session reported its whole time (`session_s`)."""
    timing = {k: v for k, v in (run.timing or {}).items() if isinstance(v, int | float)}
    opened = float(timing.get("screen_s", 0.0)) + sum(
        v for k, v in timing.items() if (m := PLUGIN_KEY.match(k)) and m["when"] == "open")
    actions = sum(v for k, v in timing.items() if ACTION_KEY.match(k))
    out = {"snapshot": run.load_seconds * 1e3, "open_session": opened * 1e3, "actions": actions * 1e3}
    if "session_s" in timing:  # from the session's opening: screening is outside it
        inside = opened - float(timing.get("screen_s", 0.0))
        out["close_session"] = max(0.0, float(timing["session_s"]) - inside - actions) * 1e3
    out["write"] = run.write_seconds * 1e3
    return out


def waits(state: LoadedState, result: SessionResult, applied: set[int], now: datetime,
          bound: dict[str, list[str]] | None = None) -> tuple[list[float], list[float]]:
    """(per task bound and written: ms since the task's creation; per job whose first tasks these
    are: ms since the job's creation). Works on the snapshot before or after the session: the
    tasks bound in this cycle are left out of "started before". `bound`: bound_jobs' answer."""
    at = now.timestamp()
    task_ms, job_ms = [], []
    bound = bound_jobs(state, result, applied) if bound is None else bound
    for job_uid, uids in sorted(bound.items()):
        job = state.snapshot.jobs.get(job_uid)
        if job is None:
            continue
        for uid in uids:
            task = job.tasks.get(uid)
            if task is not None and task.created > 0:
                task_ms.append(max(0.0, (at - task.created) * 1e3))
        here = set(uids)
        earlier = any(t.status in STARTED_BEFORE for u, t in job.tasks.items() if u not in here)
        if job.created > 0 and not earlier:
            job_ms.append(max(0.0, (at - job.created) * 1e3))
    return task_ms, job_ms


def bound_jobs(state: LoadedState, result: SessionResult, applied: set[int]) -> dict[str, list[str]]:
    """Job uid -> the uids of its tasks the session bound and the cycle wrote."""
    bound: dict[str, list[str]] = {}
    for uid in sorted(result.binds):
        row = state.tasks.get(uid)
        if row is not None and row[0] in applied:
            bound.setdefault("/".join(uid.split("/", 2)[:2]), []).append(uid)
    return bound


def record_skip() -> None:
    """A cycle that found the leader lock taken."""
    metric_totals.add(CYCLES.name, labels={"outcome": "skipped"})


def record_failure() -> None:
    """A failed cycle (the caller records it in the same transaction)."""
    totals = metric_totals.Totals()
    totals.count(CYCLES.name, labels={"outcome": "failed"})
    totals.count(ATTEMPTS.name, 1, {"result": "error"})
    totals.apply()


def record_agent_failure() -> None:
    """A simulated agent step that failed (after the cycle: the body /metrics serves follows)."""
    metric_totals.add(AGENT_FAILURES.name)
    metrics_body.after_cycle()

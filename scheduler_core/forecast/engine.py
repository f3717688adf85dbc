"""forecast(): run the real scheduler forward from the committed state until every waiting job
has an estimated start (or the horizon, step or CPU budget is reached).

The first cycle runs at `now` on the committed state; after a cycle that changed something the
next one runs one period later (what it changed may let more start); after a quiet cycle the
simulation jumps to the next cycle at which the snapshot changes (a task ends, a release
completes, a plugin's clock turns). A quiet cycle's successor would see the very same state, so
the jump skips only sessions that would decide nothing. Event instants are also passed over
without a session when `IdleCheck` proves that nothing could start there (see its docstring).
Same input, same forecast.
"""

from __future__ import annotations

import copy as _copy
import time
from collections.abc import Iterable, Mapping, Sequence

from scheduler_core.forecast.simulator import Simulator
from scheduler_core.forecast.types import Basis, Forecast, JobForecast
from scheduler_core.framework.close_phases import final_phase
from scheduler_core.framework.conf import DEFAULT_CONF, SchedulerConf
from scheduler_core.framework.node_table import NodeTable
from scheduler_core.framework.registry import load_all, plugin_builders
from scheduler_core.framework.sharding import Sharding
from scheduler_core.model import ClusterSnapshot, JobInfo, JobPhase, TaskStatus
from scheduler_core.resources import Resource
from scheduler_core.result import SessionResult

# Reasons that no cycle of the simulation can lift (read by value: "NeverFits" may be absent
# from ReasonCode in older trees).
NEVER_CODES = frozenset({"NeverFits", "InvalidJob", "QueueClosed"})
# Actions that only place into free room or admit: a cycle where nothing fits changes nothing.
QUIET_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
USAGE_FRESH_S = 300.0  # scheduler_core.plugins.usage.usage METRICS_ACTIVE_SECONDS
DEFAULT_MAX_STEPS = 2000


def is_waiting(job: JobInfo) -> bool:
    """A job that has not started: fewer than min_available tasks running (or done)."""
    return job.phase is not JobPhase.COMPLETED and job.ready_task_num() < job.min_available


class IdleCheck:
    """Proves, without a session, that a cycle would change nothing, so its instant can be skipped.

    Only for confs whose actions are among enqueue / allocate / backfill (nothing evicts) and
    without rescheduling: then a session changes the state only by admitting a Pending job, by
    placing a task into a node's idle or future idle room, or by a job's phase. So the cycle is
    idle when no job is in phase Pending, the jobs whose tasks just ended keep their phase, and
    no Pending task fits any node by resources alone (predicates, pods, queue limits and gangs
    ignored: any of them can only refuse more).
    """

    def __init__(self, conf: SchedulerConf) -> None:
        self.enabled = set(conf.actions) <= QUIET_ACTIONS and conf.plugin("rescheduling") is None
        self._version = -1
        self._requests: list[Resource] = []

    def _pending_requests(self, sim: Simulator) -> list[Resource]:
        if sim.pending_version != self._version:
            seen: dict[tuple, Resource] = {}
            aside = sim.snap.set_aside
            for uid, job in sim.snap.jobs.items():
                bucket = job.task_status_index.get(TaskStatus.PENDING)
                if not bucket or uid in aside:
                    continue
                for task in bucket.values():
                    r = task.resreq
                    seen.setdefault((r.milli_cpu, r.memory, tuple(sorted(r.scalars.items()))), r)
            self._requests = list(seen.values())
            self._version = sim.pending_version
        return self._requests

    def idle(self, sim: Simulator, touched: Iterable[str]) -> bool:
        """True when a session now would bind, pipeline, evict, admit and re-phase nothing."""
        if not self.enabled:
            return False
        jobs, aside = sim.snap.jobs, sim.snap.set_aside
        for uid in touched:
            job = jobs.get(uid)
            if job is not None and final_phase(job, 0) is not job.phase:
                return False
        if any(job.phase is JobPhase.PENDING and uid not in aside for uid, job in jobs.items()):
            return False
        requests = self._pending_requests(sim)
        if not requests:
            return True
        table = NodeTable(sim.snap.nodes.values())
        try:
            return not any(table.fit_mask(r).any() or table.fit_mask(r, future=True).any() for r in requests)
        finally:
            table.release()


class Clocks:
    """Cycles at which a plugin's answer changes with time alone: an SLA deadline passing, node
    usage figures going stale, rescheduling falling due (its `lastRun` advances as the cycle
    service advances it)."""

    def __init__(self, sim: Simulator, conf: SchedulerConf) -> None:
        load_all()
        self.conf = conf
        self.rescheduling = conf.plugin("rescheduling")
        if self.rescheduling is not None:
            self.conf = _copy.deepcopy(conf)  # lastRun changes as the simulation goes
            self.rescheduling = self.conf.plugin("rescheduling")
            plugin = self._rescheduling_plugin()
            if plugin is not None and plugin.last_run is not None:
                sim.add_time_event(sim.cycle_at_or_after(plugin.last_run + plugin.interval))
        sla = conf.plugin("sla")
        if sla is not None and "sla" in plugin_builders:
            plugin = plugin_builders["sla"](dict(sla.arguments))
            for job in sim.snap.jobs.values():
                wait = plugin.waiting_time(job)
                if wait is not None:
                    sim.add_time_event(sim.cycle_at_or_after(job.created + wait))
        if conf.plugin("usage") is not None:
            for node in sim.snap.nodes.values():
                if node.usage is not None and node.usage_time is not None:
                    sim.add_time_event(sim.cycle_at_or_after(node.usage_time + USAGE_FRESH_S, strict=True))

    def _rescheduling_plugin(self) -> object | None:
        builder = plugin_builders.get("rescheduling")
        if builder is None or self.rescheduling is None:
            return None
        return builder(dict(self.rescheduling.arguments))

    def after_cycle(self, sim: Simulator, k: int) -> None:
        """Record that rescheduling ran at cycle k (when it was due) and when it is due next."""
        plugin = self._rescheduling_plugin()
        if plugin is None or not plugin.strategies:  # type: ignore[attr-defined]
            return
        t = sim.instant(k)
        if plugin.time_to_run(t):  # type: ignore[attr-defined]
            assert self.rescheduling is not None
            self.rescheduling.arguments["lastRun"] = t
            sim.add_time_event(sim.cycle_at_or_after(t + plugin.interval))  # type: ignore[attr-defined]


def _answer(sim: Simulator, waiting: dict[str, None], answers: dict[str, JobForecast],
            results: list[SessionResult], k: int) -> None:
    """Jobs that started at cycle k (all of min_available bound) or can never start."""
    t = sim.instant(k)
    basis = Basis.HISTORY if sim.history_seen else Basis.DECLARED
    for uid in list(waiting):
        job = sim.snap.jobs.get(uid)
        if job is None:  # left without starting (completed by the session): it never will
            answers[uid] = JobForecast(None, Basis.NEVER)
        elif job.ready_task_num() >= job.min_available:
            answers[uid] = JobForecast(t, basis)
        else:
            # Each instance explains its own jobs (one result unless sharded).
            reason = next((r.reasons[uid] for r in results if uid in r.reasons), None)
            if reason is None or str(getattr(reason, "code", "")) not in NEVER_CODES:
                continue
            answers[uid] = JobForecast(None, Basis.NEVER)
        del waiting[uid]


def forecast(snapshot: ClusterSnapshot, conf: SchedulerConf | None = None, *, now: float | None = None,
             horizon_s: float = 86400.0, max_steps: int = DEFAULT_MAX_STEPS,
             cpu_budget_s: float | None = None, runtime_estimates: Mapping[str, float] | None = None,
             period: float = 2.0, release_grace_s: float | None = None, copy: bool = True,
             skip_idle: bool = True, shardings: Sequence[Sharding] = ()) -> Forecast:
    """Estimated start of every job waiting in `snapshot` (the committed state at `now`).

    `runtime_estimates`: queue name -> typical runtime in seconds (e.g. the median of its recent
    jobs), used for running tasks without a declared duration (basis `history`). `period`:
    seconds between cycles (estimates fall on this grid; completions within one period share a
    cycle). `release_grace_s`: how long an evicted task keeps its node (default one period).
    `copy=False` lets the forecast change `snapshot` in place (the caller hands it over).
    `skip_idle=False` runs a session at every event instant (IdleCheck off; same answers, slower).
    `shardings`: on a sharded cluster, every scheduler instance's (framework.sharding): each
    simulated cycle runs one session per instance, each placing only its own jobs, in its mode.
    Stops at the first of: every waiting job answered, nothing left to change, `horizon_s` after
    now, `max_steps` sessions, `cpu_budget_s` seconds of this process's CPU time.
    """
    conf = conf or DEFAULT_CONF
    wall, cpu = time.perf_counter(), time.process_time()
    sim = Simulator(snapshot, now=now, period=period, release_grace_s=release_grace_s,
                    runtime_estimates=runtime_estimates, copy=copy)
    waiting = {uid: None for uid in sorted(sim.snap.jobs) if is_waiting(sim.snap.jobs[uid])}
    answers: dict[str, JobForecast] = {}
    out = Forecast(now=sim.t0, period=sim.period)
    clocks = Clocks(sim, conf)
    check = IdleCheck(clocks.conf)
    check.enabled = check.enabled and skip_idle
    last = int(horizon_s / sim.period + 1e-9)  # the last cycle within the horizon
    k: int | None = 0
    while waiting:
        if out.cycles >= max_steps:
            out.stop = "max_steps"
            break
        if cpu_budget_s is not None and out.cycles and time.process_time() - cpu >= cpu_budget_s:
            out.stop = "cpu_budget"
            break
        assert k is not None
        results, changed = sim.run_cycle(k, clocks.conf, shardings)
        out.cycles += 1
        out.until = sim.instant(k)
        clocks.after_cycle(sim, k)
        _answer(sim, waiting, answers, results, k)
        if not waiting:
            break
        k = k + 1 if changed else _next_busy(sim, check, out, last)
        if k is None:
            out.stop = "quiet"
            break
        if k > last:
            out.stop = "horizon"
            out.until = sim.instant(last)
            break
    for uid in waiting:  # still waiting when the simulation stopped
        if sim.unknown:
            answers[uid] = JobForecast(None, Basis.UNKNOWN)
        elif out.stop == "quiet":
            answers[uid] = JobForecast(None, Basis.NEVER)
        else:
            answers[uid] = JobForecast(None, Basis.BEYOND_HORIZON)
    out.jobs = {uid: answers[uid] for uid in sorted(answers)}
    out.elapsed_s = time.perf_counter() - wall
    out.cpu_s = time.process_time() - cpu
    return out


def _next_busy(sim: Simulator, check: IdleCheck, out: Forecast, last: int) -> int | None:
    """After a quiet cycle: the next event cycle at which a session could change something
    (None when nothing is left to happen; past `last`, the first event beyond it)."""
    while True:
        k = sim.next_event()
        if k is None or k > last:
            return k
        touched = sim.advance_to(k)
        if not check.idle(sim, touched):
            return k
        out.skipped += 1

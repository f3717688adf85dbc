"""Forecast benchmark: how long `scheduler_core.forecast.forecast` takes, and how accurate it is.

    python -m scheduler_core.bench.forecast_bench                      # S and M runtime, S accuracy
    python -m scheduler_core.bench.forecast_bench --sizes S --accuracy S,M --budget 20 --json var/bench

Runtime, on the steady clusters of `bench.generator` (`build_world(size, "steady", seed)` +
`to_snapshot`): as generated (no task declares a duration: after the first cycles every waiting
job is `unknown`), with the snapshot handed over (`copy=False`, as a caller that loads a fresh
snapshot would) and copied first; then with a declared duration on every job (`with_durations`:
5 min to 1 h, running jobs part-way through) at the 2 s period and at a 60 s period, under a CPU
budget (`--budget`, seconds; jobs past it are `beyond_horizon`).

Accuracy: the same cluster with declared durations; the forecast at t0, then a replay of the
same simulator cycle by cycle (`Simulator.run_cycle` at every period; `--replay-jumps` runs only
cycles after a change or at an end, release or arrival, as the forecast does) without the
forecast's shortcuts (idle-instant skipping, stopping once all are answered); each waiting
job's real start (its gang bound) against its estimate: median / p90 / max absolute error, which
must be 0 without arrivals. Then the replay again with new jobs
arriving every 2 minutes (1% of the running tasks each time, from the generator), which the
forecast cannot know about.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from scheduler_core.bench.generator import World, build_world, make_job
from scheduler_core.bench.report import print_table, write_json
from scheduler_core.bench.snapshot import conf_of, to_snapshot
from scheduler_core.forecast import Basis, Forecast, Simulator, forecast, is_waiting
from scheduler_core.framework.conf import SchedulerConf
from scheduler_core.model import ClusterSnapshot, JobInfo, TaskStatus

DURATIONS = (300.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0)
ARRIVAL_EVERY_S = 120.0
ARRIVAL_SHARE = 0.01


def with_durations(snap: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    """Give every job a declared duration (same for its tasks); running jobs started part-way
    through it, so they end within (now, now + duration]. Seeded: same seed, same durations."""
    rng = np.random.default_rng(seed)
    for uid in sorted(snap.jobs):
        job = snap.jobs[uid]
        duration = float(rng.choice(DURATIONS))
        started = snap.now - float(rng.uniform(0.0, duration))
        for task in job.tasks.values():
            task.duration = duration
            if task.status is TaskStatus.RUNNING:
                task.started = started
    return snap


def _summary(fc: Forecast) -> dict[str, Any]:
    counts = {b.value: 0 for b in Basis}
    for j in fc.jobs.values():
        counts[j.estimate_basis.value] += 1
    return {"waiting": len(fc.jobs), "started": counts["declared"] + counts["history"],
            "never": counts["never"], "unknown": counts["unknown"], "beyond": counts["beyond_horizon"],
            "cycles": fc.cycles, "skipped": fc.skipped, "stop": fc.stop,
            "sim_h": round((fc.until - fc.now) / 3600, 2), "wall_s": round(fc.elapsed_s, 3),
            "cpu_s": round(fc.cpu_s, 3)}


def runtime_rows(size: str, seed: int, budget: float) -> list[dict[str, Any]]:
    """The runtime cases of one size (see the module docstring)."""
    world = build_world(size, "steady", seed)
    conf = conf_of(world.spec)
    rows = []
    for label, copy in (("none", False), ("none", True)):
        fc = forecast(to_snapshot(world.spec), conf, copy=copy)
        rows.append({"size": size, "durations": label, "copy": "yes" if copy else "no", "period_s": 2.0,
                     **_summary(fc)})
    for period in (2.0, 60.0):
        snap = with_durations(to_snapshot(world.spec), seed)
        fc = forecast(snap, conf, copy=False, period=period, cpu_budget_s=budget)
        rows.append({"size": size, "durations": "declared", "copy": "no", "period_s": period, **_summary(fc)})
    return rows


def _arrivals(world: World, sim: Simulator, running_tasks: int, horizon_k: int) -> dict[int, list[JobInfo]]:
    """New jobs every ARRIVAL_EVERY_S (ARRIVAL_SHARE of the running tasks each time), by cycle."""
    spec = world.spec
    every = max(1, round(ARRIVAL_EVERY_S / sim.period))
    out: dict[int, list[JobInfo]] = {}
    for k in range(every, horizon_k + 1, every):
        jobs_spec, tasks = [], 0
        while tasks < max(1, int(running_tasks * ARRIVAL_SHARE)):
            queue = world.leaves[int(world.rng.integers(len(world.leaves)))]
            job = make_job(world, queue, running=False)
            job["created"] = sim.instant(k)
            jobs_spec.append(job)
            tasks += len(job["tasks"])
        mini = {"nodes": [], "queues": spec["queues"], "priority_classes": spec["priority_classes"],
                "jobs": jobs_spec, "now": sim.instant(k)}
        new = with_durations(to_snapshot(mini), int(k))
        out[k] = list(new.jobs.values())
    return out


def replay(snap: ClusterSnapshot, conf: SchedulerConf, world: World | None = None, *, period: float = 2.0,
           horizon_s: float = 86400.0, every_cycle: bool = True) -> tuple[dict[str, float], int]:
    """Step the simulator cycle by cycle from the committed state (with arrivals when `world` is
    given) until every job waiting at t0 has started; returns (their real starts, cycles run).
    `every_cycle=False` passes over the cycles that would see the same state as the one before
    (after a cycle that changed nothing, up to the next end, release or arrival)."""
    sim = Simulator(snap, period=period)
    horizon_k = int(horizon_s / period)
    waiting = {uid for uid, job in sim.snap.jobs.items() if is_waiting(job)}
    arrivals: dict[int, list[JobInfo]] = {}
    if world is not None:
        running = sum(job.count(TaskStatus.RUNNING) for job in sim.snap.jobs.values())
        arrivals = _arrivals(world, sim, running, horizon_k)
        for k in arrivals:
            sim.add_time_event(k)
    starts: dict[str, float] = {}
    k: int | None = 0
    cycles = 0
    while k is not None and k <= horizon_k and len(starts) < len(waiting):
        if k in arrivals:
            sim.add_jobs(arrivals.pop(k))
        _, changed = sim.run_cycle(k, conf)
        cycles += 1
        for uid in waiting - starts.keys():
            job = sim.snap.jobs.get(uid)
            if job is not None and job.ready_task_num() >= job.min_available:
                starts[uid] = sim.instant(k)
        k = k + 1 if changed or every_cycle else sim.next_event()
    return starts, cycles


def accuracy_rows(size: str, seed: int, every_cycle: bool = True) -> list[dict[str, Any]]:
    """Forecast at t0 against the replay, without and with arrivals."""
    world = build_world(size, "steady", seed)
    conf = conf_of(world.spec)
    base = with_durations(to_snapshot(world.spec), seed)
    fc = forecast(base, conf)
    rows = []
    for label, arrivals in (("none", None), ("every 2 min", world)):
        started = time.perf_counter()
        starts, cycles = replay(base, conf, arrivals, every_cycle=every_cycle)
        errors = [abs(fc.jobs[uid].estimated_start - real) for uid, real in starts.items()  # type: ignore[operator]
                  if fc.jobs[uid].estimated_start is not None]
        rows.append({"size": size, "arrivals": label, "waiting": len(fc.jobs), "compared": len(errors),
                     "no_estimate": sum(1 for j in fc.jobs.values() if j.estimated_start is None),
                     "not_started": len(fc.jobs) - len(starts),
                     "exact": sum(1 for e in errors if e == 0),
                     "median_err_s": float(np.median(errors)) if errors else None,
                     "p90_err_s": float(np.percentile(errors, 90)) if errors else None,
                     "max_err_s": max(errors) if errors else None,
                     "forecast_cycles": fc.cycles, "replay_cycles": cycles,
                     "forecast_s": round(fc.elapsed_s, 2),
                     "replay_s": round(time.perf_counter() - started, 2)})
    return rows


RUNTIME_COLUMNS = [("size", "size"), ("durations", "durations"), ("copy", "copy"), ("period s", "period_s"),
                   ("waiting", "waiting"), ("started", "started"), ("never", "never"), ("unknown", "unknown"),
                   ("beyond", "beyond"), ("cycles", "cycles"), ("skipped", "skipped"), ("stop", "stop"),
                   ("simulated h", "sim_h"), ("wall s", "wall_s"), ("cpu s", "cpu_s")]
ACCURACY_COLUMNS = [("size", "size"), ("arrivals", "arrivals"), ("waiting", "waiting"),
                    ("compared", "compared"), ("no estimate", "no_estimate"), ("not started", "not_started"),
                    ("exact", "exact"), ("median err s", "median_err_s"), ("p90 err s", "p90_err_s"),
                    ("max err s", "max_err_s"), ("forecast cycles", "forecast_cycles"),
                    ("replay cycles", "replay_cycles"), ("forecast s", "forecast_s"),
                    ("replay s", "replay_s")]


def main(argv: list[str] | None = None) -> int:
    """Run the runtime and accuracy cases; print the tables, optionally write JSON."""
    parser = argparse.ArgumentParser(prog="python -m scheduler_core.bench.forecast_bench")
    parser.add_argument("--sizes", default="S,M", help="runtime sizes (default S,M)")
    parser.add_argument("--accuracy", default="S", help="accuracy sizes (default S; '' for none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=10.0, help="CPU seconds per declared-durations case")
    parser.add_argument("--replay-jumps", action="store_true",
                        help="replay only the cycles whose state changed (for sizes above S)")
    parser.add_argument("--json", type=Path, default=None, help="directory for forecast-*.json")
    args = parser.parse_args(argv)
    # Warm up (imports, plugin registry, numpy) so the first case is not charged for them.
    forecast(to_snapshot(build_world("S", "steady", args.seed).spec), max_steps=1)
    sizes = [s for s in args.sizes.split(",") if s]
    runtime = [row for size in sizes for row in runtime_rows(size, args.seed, args.budget)]
    text = print_table("Forecast runtime", RUNTIME_COLUMNS, runtime) if runtime else ""
    accuracy = [row for size in args.accuracy.split(",") if size for row in accuracy_rows(size, args.seed,
                                                                                      not args.replay_jumps)]
    if accuracy:
        title = "Forecast accuracy (estimate vs replayed start)"
        text += "\n" + print_table(title, ACCURACY_COLUMNS, accuracy)
    if args.json is not None:
        write_json(args.json, "forecast", {"runtime": runtime, "accuracy": accuracy}, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

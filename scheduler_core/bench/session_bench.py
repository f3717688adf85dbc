"""In-memory session benchmark: scheduler_core alone on generated clusters (no database).

    python -m scheduler_core.bench.session_bench [--sizes S,M] [--scenarios fill,steady] [--json DIR]
    python -m scheduler_core.bench.session_bench --profile M:fill     # pyinstrument call tree
    python -m scheduler_core.bench.session_bench --sizes '' --extra '' --compare-limit L:fill,L:steady

Each (size, scenario) case runs in its own subprocess so that its peak RSS is its own.
fill: one cycle on a fresh snapshot, 3 times; contention: one such cycle; steady: a warm-up
cycle, then cycles with 1% churn (whole running jobs finish, as many new tasks arrive);
backlog: a warm-up cycle, then cycles on the same state; fill-binpack: fill's cluster with
nodeorder off and binpack weighted 10 (long runs of identical tasks on one node). Times are
wall-clock `run_session` seconds; the snapshot build (the in-memory "load") is reported apart.
Cycles share one rotating index of the feasible-node search limit, as the scheduling cycle does
(`framework.node_search`; `search_k` = feasible nodes kept per task). `--compare-limit` cases
also run with the limit off (scenario `<name>/no-limit`, K = every node) and the placements/s
ratio of Volcano's defaults to no limit is printed. `--compare-scores` cases (fresh scenarios)
run node-score recording off and on in alternating rounds in one child process and print the
CPU-time ratio of on to off per round (its range: the machine is shared).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scheduler_core.bench.generator import SCENARIOS, SIZES, VARIANTS, build_world
from scheduler_core.bench.report import check_targets, machine, print_table, write_json
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.framework.node_search import NodeScan, SearchOptions, nodes_to_find
from scheduler_core.model import TaskStatus
from scheduler_core.scheduler import run_session

DEFAULT_CYCLES = {"fill": 3, "contention": 1, "steady": 30, "backlog": 10, "fill-binpack": 3}
# Scenarios run on a fresh snapshot every cycle (no warm-up).
FRESH = ("fill", "contention", "fill-binpack")
NO_LIMIT = "/no-limit"  # scenario suffix of a case run without the feasible-node search limit
SCORES = "/scores"  # child case suffix: recording off vs on (score_overhead)
UNLIMITED = SearchOptions(percentage_nodes_to_find=100)


def pct(values: list[float], q: float) -> float:
    """Percentile (linear), 0 for no values."""
    return float(np.percentile(values, q)) if values else 0.0


def selected_cases(parser: argparse.ArgumentParser, sizes: str, scenarios: str,
                   extra: str) -> list[tuple[str, str]]:
    """Every size with every scenario (comma lists), then the `extra` SIZE:SCENARIO pairs; an
    unknown or malformed case is a usage error (exit 2) before any case runs."""
    cases = [(s, c) for s in sizes.split(",") if s for c in scenarios.split(",") if c]
    for item in (x for x in extra.split(",") if x):
        size, _, scenario = item.partition(":")
        cases.append((size, scenario))
    for size, scenario in cases:
        if size not in SIZES or scenario not in (*SCENARIOS, *VARIANTS):
            parser.error(f"unknown case {size}:{scenario}")
    return cases


def run_case(size: str, scenario: str, seed: int = 1, cycles: int | None = None) -> dict[str, Any]:
    """Run one case in this process; returns its figures (ms, counts, placements/s, peak RSS).
    A scenario ending in NO_LIMIT runs its base scenario with the search limit off."""
    name = scenario
    limited = not scenario.endswith(NO_LIMIT)
    scenario = scenario.removesuffix(NO_LIMIT)
    cycles = cycles or DEFAULT_CYCLES[scenario]
    started = time.perf_counter()
    world = build_world(size, scenario, seed)
    gen_s = time.perf_counter() - started
    conf = conf_of(world.spec)
    if not limited:
        conf = dataclasses.replace(conf, options=UNLIMITED)
    scan = NodeScan()  # kept across the cycles, as the scheduling cycle keeps it
    churn = Churn(world) if scenario in ("steady", "backlog") else None
    build, session, cpu, placed, evicted = [], [], [], [], []
    warmup: dict[str, float] = {}
    fresh = scenario in FRESH
    for cycle in range(cycles + (0 if fresh else 1)):
        if churn is not None and scenario == "steady" and cycle > 0:
            churn.step()
        t0 = time.perf_counter()
        snap = to_snapshot(world.spec)
        t1, c1 = time.perf_counter(), time.process_time()
        result = run_session(snap, conf, node_scan=scan)
        t2, c2 = time.perf_counter(), time.process_time()
        if churn is not None:
            churn.apply(result)
        n = len(result.binds) + len(result.pipelined)
        if not fresh and cycle == 0:
            warmup = {"build_ms": (t1 - t0) * 1e3, "session_ms": (t2 - t1) * 1e3, "placed": n}
            continue
        build.append((t1 - t0) * 1e3)
        session.append((t2 - t1) * 1e3)
        cpu.append((c2 - c1) * 1e3)  # CPU time: less sensitive to other processes on the machine
        placed.append(n)
        evicted.append(len(result.evictions))
    snap = to_snapshot(world.spec)
    tasks = sum(len(j.tasks) for j in snap.jobs.values())
    pending = sum(j.count(TaskStatus.PENDING) for j in snap.jobs.values())
    total_s = sum(session) / 1e3
    return {
        "size": size, "scenario": name, "seed": seed, "cycles": len(session),
        "nodes": len(snap.nodes), "search_k": nodes_to_find(len(snap.nodes), conf.options),
        "queues": len(snap.queues), "jobs": len(snap.jobs),
        "tasks": tasks, "pending_after": pending, "generate_s": round(gen_s, 3),
        "build_ms_p50": round(pct(build, 50), 2),
        "session_ms_p50": round(pct(session, 50), 2), "session_ms_p99": round(pct(session, 99), 2),
        "session_ms_max": round(max(session), 2), "session_cpu_ms_p50": round(pct(cpu, 50), 2),
        "placed_per_cycle": round(sum(placed) / len(placed), 1),
        "evicted_per_cycle": round(sum(evicted) / len(evicted), 1),
        "placements_per_s": round(sum(placed) / total_s) if total_s else 0,
        "warmup": {k: round(v, 2) for k, v in warmup.items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def score_overhead(size: str, scenario: str, seed: int = 1, rounds: int = 4) -> dict[str, Any]:
    """CPU seconds of `run_session` with node-score recording off and on (`record_scores=True`),
    alternating, `rounds` of each on fresh snapshots; the on/off ratio of each round."""
    world = build_world(size, scenario, seed)
    conf = conf_of(world.spec)
    off, on, digests = [], [], set()
    for _ in range(rounds):
        for record, out in ((False, off), (True, on)):
            snap = to_snapshot(world.spec)
            c0 = time.process_time()
            result = run_session(snap, conf, node_scan=NodeScan(), record_scores=record)
            out.append(time.process_time() - c0)
            digests.add(json.dumps([sorted(result.binds.items()), sorted(result.pipelined.items())]))
    ratios = [b / a for a, b in zip(off, on, strict=True)]
    return {"size": size, "scenario": scenario, "off_cpu_s": [round(x, 3) for x in off],
            "on_cpu_s": [round(x, 3) for x in on], "ratios": [round(x, 3) for x in ratios],
            "same_decisions": len(digests) == 1}


def score_lines(rows: list[dict[str, Any]]) -> str:
    """The recording-overhead lines of the report (printed, and returned for the report file)."""
    lines = [f"- {r['size']} {r['scenario']}: on/off CPU {min(r['ratios']):.2f}-{max(r['ratios']):.2f}x "
             f"(off {min(r['off_cpu_s'])}-{max(r['off_cpu_s'])} s, on {min(r['on_cpu_s'])}-"
             f"{max(r['on_cpu_s'])} s, {len(r['ratios'])} rounds); decisions "
             f"{'identical' if r['same_decisions'] else 'DIFFER'}" for r in rows]
    text = "\n".join(lines)
    if text:
        print("\nNode-score recording (record_scores=True vs off, alternating rounds):\n" + text)
    return text + "\n" if text else ""


def run_isolated(size: str, scenario: str, seed: int, cycles: int = 0) -> dict[str, Any]:
    """run_case in a child process (own peak RSS); raises if the child fails."""
    out = subprocess.run(
        [sys.executable, "-m", "scheduler_core.bench.session_bench", "--case", f"{size}:{scenario}",
         "--seed", str(seed), "--cycles", str(cycles)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def profile(size: str, scenario: str, seed: int = 1, top: int = 25, profiler: str = "pyinstrument") -> str:
    """Profile of one cycle (the first after warm-up for steady/backlog): pyinstrument's call tree
    (sampling, little overhead), or cProfile's top `top` by own and by cumulative time."""
    world = build_world(size, scenario, seed)
    conf = conf_of(world.spec)
    if scenario in ("steady", "backlog"):
        churn = Churn(world)
        churn.apply(run_session(to_snapshot(world.spec), conf))
        if scenario == "steady":
            churn.step()
    snap = to_snapshot(world.spec)
    if profiler == "pyinstrument":
        return sample_profile(lambda: run_session(snap, conf))
    prof = cProfile.Profile()
    prof.enable()
    run_session(snap, conf)
    prof.disable()
    lines: list[str] = []
    for key in ("tottime", "cumtime"):
        buf = _Capture()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(top)
        lines.append(buf.text)
    return "\n".join(lines)


def sample_profile(fn: Callable[[], object], interval: float = 0.0005) -> str:
    """pyinstrument's call tree of one call of `fn` (frames under 1% of the time left out)."""
    from pyinstrument import Profiler

    prof = Profiler(interval=interval)
    prof.start()
    fn()
    prof.stop()
    return prof.output_text(unicode=False, color=False, show_all=False)


class _Capture:
    """A write-only text sink for pstats."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        """Append."""
        self.text += s
        return len(s)


COLUMNS = [("size", "size"), ("scenario", "scenario"), ("nodes", "nodes"), ("K", "search_k"),
           ("tasks", "tasks"), ("cycles", "cycles"), ("placed/cycle", "placed_per_cycle"),
           ("evicted/cycle", "evicted_per_cycle"),
           ("build p50 ms", "build_ms_p50"), ("session p50 ms", "session_ms_p50"),
           ("session p99 ms", "session_ms_p99"), ("CPU p50 ms", "session_cpu_ms_p50"),
           ("placements/s", "placements_per_s"),
           ("peak RSS MB", "peak_rss_mb")]


def limit_ratios(rows: list[dict[str, Any]], compared: list[tuple[str, str]]) -> str:
    """One line per compared case: placements per second of session wall time and of session CPU
    time (steadier on a shared machine) with Volcano's search limit against no limit (printed,
    and returned for the report file)."""
    by_case = {(r["size"], r["scenario"]): r for r in rows}

    def per_cpu_s(row: dict[str, Any]) -> float:
        cpu = row["session_cpu_ms_p50"]
        return row["placed_per_cycle"] / cpu * 1e3 if cpu else 0.0

    lines = []
    for size, scenario in compared:
        on, off = by_case[(size, scenario)], by_case[(size, scenario + NO_LIMIT)]
        wall = on["placements_per_s"] / off["placements_per_s"] if off["placements_per_s"] else 0.0
        cpu = per_cpu_s(on) / per_cpu_s(off) if per_cpu_s(off) else 0.0
        lines.append(f"- {size} {scenario}: K = {on['search_k']} of {on['nodes']} nodes: "
                     f"{on['placements_per_s']} placements/s vs {off['placements_per_s']} without the limit "
                     f"({wall:.2f}x); per CPU second {per_cpu_s(on):.0f} vs {per_cpu_s(off):.0f} "
                     f"({cpu:.2f}x); "
                     f"session p50 {on['session_ms_p50']} vs {off['session_ms_p50']} ms")
    text = "\n".join(lines)
    if text:
        print("\nFeasible-node search limit (Volcano's defaults vs every node):\n" + text)
    return text + "\n" if text else ""


def main(argv: list[str] | None = None) -> int:
    """Command line: run cases (each in a subprocess), print the table, write JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="S,M")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--extra", default="L:fill,M:fill-binpack",
                   help="more size:scenario cases, comma separated")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cycles", type=int, default=0, help="override the cycles per case (0 = defaults)")
    p.add_argument("--compare-limit", default="L:fill",
                   help="size:scenario cases also run without the feasible-node search limit")
    p.add_argument("--compare-scores", default="M:fill",
                   help="size:scenario cases run with node-score recording off and on, alternating")
    p.add_argument("--json", default="var/bench", help="directory for the JSON output ('' = none)")
    p.add_argument("--case", help=argparse.SUPPRESS)  # child mode: one case, JSON on stdout
    p.add_argument("--profile", metavar="SIZE:SCENARIO", help="profile one cycle of the case instead")
    p.add_argument("--profiler", choices=("pyinstrument", "cprofile"), default="pyinstrument")
    args = p.parse_args(argv)
    if args.case and args.case.endswith(SCORES):
        size, scenario = args.case.removesuffix(SCORES).split(":")
        print(json.dumps(score_overhead(size, scenario, args.seed, args.cycles or 4)))
        return 0
    if args.case:
        size, scenario = args.case.split(":")
        print(json.dumps(run_case(size, scenario, args.seed, args.cycles or None)))
        return 0
    if args.profile:
        size, scenario = args.profile.split(":")
        print(profile(size, scenario, args.seed, profiler=args.profiler))
        return 0
    rows = []
    cases = selected_cases(p, args.sizes, args.scenarios, args.extra)
    compared = selected_cases(p, "", "", args.compare_limit)
    cases += [c for c in compared if c not in cases]
    cases += [(size, scenario + NO_LIMIT) for size, scenario in compared]
    for size, scenario in cases:
        rows.append(run_isolated(size, scenario, args.seed, args.cycles))
        print(f"  done {size}:{scenario} session p99 {rows[-1]['session_ms_p99']} ms", file=sys.stderr)
    table = print_table("In-memory session (scheduler_core alone; ms)", COLUMNS, rows)
    table += check_targets("session", rows)
    table += limit_ratios(rows, compared)
    scored = [run_isolated(size, scenario + SCORES, args.seed)
              for size, scenario in selected_cases(p, "", "", args.compare_scores)]
    table += score_lines(scored)
    if args.json:
        path = write_json(Path(args.json), "session",
                          {"machine": machine(), "cases": rows, "scores": scored}, table)
        print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

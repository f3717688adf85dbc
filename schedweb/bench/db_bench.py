"""Full scheduling cycle on PostgreSQL, split load / schedule / write, against this machine's floor.

    python -m schedweb.bench.db_bench [--sizes S,M] [--scenarios fill,steady] [--extra L:fill,L:steady]
    python -m schedweb.bench.db_bench --profile M:steady     # pyinstrument call tree of one cycle
    python -m schedweb.bench.db_bench --sizes M --scenarios steady --extra L:steady --split

Uses its own database (BENCH_DATABASE_URL, default schedweb_bench; created and migrated).
Each case runs in a subprocess (own peak RSS): the generated cluster is COPY'd in, then
`schedweb.scheduling.cycle.cycle_run()` runs as in production; its CycleRun row gives the
load / schedule / write seconds, and the wall clock around the call the cycle's own (commit and
dropping the snapshot included, which the row, written inside the transaction, cannot). Cycle
p99 is also given as a fraction of the period (SCHEDULE_PERIOD). Steady cycles after the first
apply only the changed rows to the kept snapshot (schedweb.scheduling.incremental): the table
says how many cycles needed a full load and how many task rows a cycle re-read.
Between steady cycles the node agent's work (Binding -> Running) and 1% churn happen in plain
SQL, outside the timings. The floor, same run, same data:
the load's own SQL statements re-run through raw psycopg (fetchall), and a raw COPY of as many
rows as the cycle wrote, printed as ratios (our load / raw read, our write / raw copy). Also
a raw UPDATE of as many core_task rows (rolled back): what the database itself charges for the
cycle's kind of write, next to the COPY into an unindexed, unlogged temp table.
CPU p50/p99 is the cycle process's own CPU time (the database's is not in it): the figure other
processes on a shared machine disturb least. `--split` runs each steady case a second time at a
tenth of the churn and splits its CPU into what scales with the cluster (the cost of a cycle
with nothing changed: the intercept of the line through the two cases' task rows read and CPU)
and what scales with the change (the slope times the rows read): a cycle whose cost is the
change is about 10x cheaper at a tenth of the churn. "outside session" is the cycle's wall
clock less its session's (CycleRun.schedule_seconds): the load, the writes, the commit and what
runs after it (the prerendered /metrics, the API's prebuild); its CPU is the cycle's less
`run_session_isolated`'s (which includes the load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from scheduler_core.bench.generator import SCENARIOS, build_world
from scheduler_core.bench.report import check_targets, machine, print_table, write_json
from scheduler_core.bench.session_bench import NO_LIMIT, pct, sample_profile, selected_cases
from schedweb.bench.db_floors import raw_copy_floor, raw_read_floor, raw_update_floor
from schedweb.bench.dbdata import bench_url, churn, ensure_database, load_spec, start_bound

DEFAULT_CYCLES = {"fill": 3, "contention": 1, "steady": 30, "backlog": 10}
# A scenario ending in NO_LIMIT ("/no-limit") runs its base scenario with this top-level option
# in its configuration: the feasible-node search scans every node (Volcano's defaults otherwise).
UNLIMITED = {"percentage-nodes-to-find": 100}
CHURN = 0.01  # steady: share of the running tasks that finish (and as many arrive) per cycle


def setup_django() -> str:
    """Point Django at the benchmark database, create and migrate it; returns its URL."""
    url = bench_url()
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ["DEBUG"] = "0"  # DEBUG records every query: not what production pays
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "schedweb.settings")
    ensure_database(url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return url


class WriteCounter:
    """Counts the rows the cycle's set-based writers are given (wraps schedweb.scheduling.writes
    while the `with` block runs; the originals are restored on exit)."""

    NAMES = ("update_tasks", "update_jobs", "insert_samples")

    def __init__(self) -> None:
        self.rows = 0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> WriteCounter:
        from schedweb.scheduling import writes

        for name in self.NAMES:
            self._saved[name] = getattr(writes, name)
            setattr(writes, name, self._wrap(self._saved[name]))
        return self

    def __exit__(self, *exc: object) -> None:
        from schedweb.scheduling import writes

        for name, fn in self._saved.items():
            setattr(writes, name, fn)

    def _wrap(self, fn: Any) -> Any:
        def counted(changes: Any, *args: Any) -> Any:
            self.rows += len(changes)
            return fn(changes, *args)
        return counted


class SessionClock:
    """The process CPU of each cycle's `run_session_isolated` (the snapshot's load included),
    so the rest of the cycle's CPU is known (wraps schedweb.scheduling.cycle while in use)."""

    def __init__(self) -> None:
        self.cpu = 0.0

    def __enter__(self) -> SessionClock:
        from schedweb.scheduling import cycle

        self._saved = real = cycle.run_session_isolated

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                self.cpu = time.process_time() - began

        cycle.run_session_isolated = timed
        return self

    def __exit__(self, *exc: object) -> None:
        from schedweb.scheduling import cycle

        cycle.run_session_isolated = self._saved


def case_spec(size: str, scenario: str, seed: int) -> tuple[Any, dict[str, Any]]:
    """The generated world of a case and the spec to load; `.../no-limit` switches the
    feasible-node search limit off in the scenario's configuration (or schedweb's default)."""
    world = build_world(size, scenario.removesuffix(NO_LIMIT), seed)
    if not scenario.endswith(NO_LIMIT):
        return world, world.spec
    import yaml

    from schedweb.scheduling.default_conf import SCHEDWEB_DEFAULT_CONF_YAML

    config = world.spec.get("config") or yaml.safe_load(SCHEDWEB_DEFAULT_CONF_YAML)
    return world, {**world.spec, "config": {**config, **UNLIMITED}}


def reset(conn: Any, spec: dict[str, Any]) -> None:
    """Load the cluster, drop cycle history, activate the scenario's config (or none)."""
    with conn.cursor() as cur:
        cur.execute("TRUNCATE scheduling_queuesample, scheduling_jobreasonhistory, scheduling_cyclerun, "
                    "core_schedulerconfig RESTART IDENTITY CASCADE")
        if "config" in spec:
            cur.execute("INSERT INTO core_schedulerconfig (version, yaml, active, comment, created) "
                        "VALUES (1, %s, true, 'bench', now())", (json.dumps(spec["config"]),))
    conn.commit()
    load_spec(conn, spec)
    conn.autocommit = True
    conn.execute("VACUUM ANALYZE")
    conn.autocommit = False


def run_case(size: str, scenario: str, seed: int = 1, cycles: int | None = None,
             rate: float = CHURN) -> dict[str, Any]:
    """One case in this process (Django set up by the caller); `rate`: steady's churn per cycle."""
    import psycopg

    from schedweb.scheduling.cycle import cycle_run

    base = scenario.removesuffix(NO_LIMIT)
    cycles = cycles or DEFAULT_CYCLES[base]
    world, spec = case_spec(size, scenario, seed)
    fresh = base in ("fill", "contention")
    from django.conf import settings

    from schedweb.scheduling import incremental

    runs, written, walls, applied, cpus, outside_cpus = [], [], [], [], [], []
    full_before = 0
    with psycopg.connect(bench_url()) as conn, WriteCounter() as counter, SessionClock() as session:
        reset(conn, spec)
        for cycle in range(cycles + (0 if fresh else 1)):
            if fresh and cycle > 0:
                reset(conn, case_spec(size, scenario, seed)[1])
            elif not fresh and cycle > 0:
                start_bound(conn)
                if base == "steady":
                    churn(conn, world, rate)
            counter.rows = 0
            if cycle == (0 if fresh else 1):
                full_before = incremental.full_loads
            t, c = time.perf_counter(), time.process_time()
            run = cycle_run()
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            if run.errors or run.skipped:
                raise RuntimeError(f"cycle failed: {run.errors or 'skipped'}")
            if fresh or cycle > 0:
                runs.append(run)
                written.append(counter.rows)
                walls.append(wall)
                cpus.append(cpu)
                outside_cpus.append(cpu - session.cpu)
                applied.append(incremental.stats().get("tasks", 0))
        incremental.forget()  # the floors' full load must not sit beside the kept snapshot (peak RSS)
        read_s, read_rows = raw_read_floor(conn)
        copy_rows = int(pct(written, 50))
        copy_s = raw_copy_floor(conn, max(copy_rows, 1))
        update_s = raw_update_floor(conn, max(copy_rows, 1))
        tasks = conn.execute("SELECT count(*) FROM core_task").fetchone()[0]

    def ms(field: str, q: float) -> float:
        return round(pct([getattr(r, field) * 1e3 for r in runs], q), 1)

    placed = [r.binds + r.pipelined for r in runs]
    outside = [wall - r.schedule_seconds for wall, r in zip(walls, runs, strict=True)]
    # The cycle as its caller waits for it: CycleRun's own duration is written inside the
    # transaction, so it leaves out the commit and dropping the snapshot.
    total_s = sum(walls)
    load, write = pct([r.load_seconds for r in runs], 50), pct([r.write_seconds for r in runs], 50)
    period = float(settings.SCHEDULE_PERIOD)
    return {
        "size": size, "scenario": scenario, "cycles": len(runs), "tasks": tasks, "churn": rate,
        "load_ms_p50": ms("load_seconds", 50), "load_ms_p99": ms("load_seconds", 99),
        "schedule_ms_p50": ms("schedule_seconds", 50), "schedule_ms_p99": ms("schedule_seconds", 99),
        "write_ms_p50": ms("write_seconds", 50), "write_ms_p99": ms("write_seconds", 99),
        "cycle_ms_p50": round(pct(walls, 50) * 1e3, 1), "cycle_ms_p99": round(pct(walls, 99) * 1e3, 1),
        "cycle_ms": [round(w * 1e3) for w in walls],  # each measured cycle, in order
        "recorded_ms_p50": ms("duration_seconds", 50),
        # Everything of the cycle but its session (the load, the writes, the commit, the body
        # of /metrics and the API's prebuild after it): wall, and CPU besides the session's.
        "outside_ms_p50": round(pct(outside, 50) * 1e3, 1),
        "outside_ms_p99": round(pct(outside, 99) * 1e3, 1),
        "outside_cpu_ms_p50": round(pct(outside_cpus, 50) * 1e3, 1),
        "outside_cpu_ms_p99": round(pct(outside_cpus, 99) * 1e3, 1),
        # The cycle process's own CPU (the database's work is another process's): what other
        # processes on a shared machine change least.
        "cpu_ms_p50": round(pct(cpus, 50) * 1e3, 1), "cpu_ms_p99": round(pct(cpus, 99) * 1e3, 1),
        "write_cpu_ms_p50": round(pct([(r.timing or {}).get("write_cpu_s", 0.0) for r in runs], 50) * 1e3, 1),
        "p99_per_period": round(pct(walls, 99) / period, 3),
        "full_loads": incremental.full_loads - full_before,
        "task_rows_applied": round(sum(applied) / len(applied), 1),
        "placed_per_cycle": round(sum(placed) / len(placed), 1),
        "evicted_per_cycle": round(sum(r.evictions for r in runs) / len(runs), 1),
        "placements_per_s": round(sum(placed) / total_s) if total_s else 0,
        "raw_select_ms": round(read_s * 1e3, 1), "rows_read": read_rows,
        "raw_copy_ms": round(copy_s * 1e3, 1), "rows_written": copy_rows,
        "raw_update_ms": round(update_s * 1e3, 1),
        "load_vs_select": round(load / read_s, 2) if read_s else None,
        "write_vs_copy": round(write / copy_s, 2) if copy_s else None,
        "write_vs_update": round(write / update_s, 2) if update_s else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def profile_case(size: str, scenario: str, seed: int = 1, conn: Any = None, warm: int = 1) -> str:
    """pyinstrument's call tree of one cycle_run() of the case: the first after `warm` warm-up
    cycles (each followed by the agent's work and 1% churn for steady), as run_case measures it.
    Kept state (reasons, figures) fills over the first few cycles: a steady profile wants warm >= 3.
    `conn`: a psycopg connection to Django's database (default: a new one to the benchmark database)."""
    import psycopg

    from schedweb.scheduling.cycle import cycle_run

    world = build_world(size, scenario, seed)
    with (psycopg.connect(bench_url()) if conn is None else nullcontext(conn)) as db:
        reset(db, world.spec)
        if scenario not in ("fill", "contention"):
            for _ in range(max(1, warm)):
                cycle_run()
                start_bound(db)
                if scenario == "steady":
                    churn(db, world)
    return sample_profile(cycle_run)


COLUMNS = [("size", "size"), ("scenario", "scenario"), ("tasks", "tasks"), ("cycles", "cycles"),
           ("placed/cycle", "placed_per_cycle"), ("load p50", "load_ms_p50"),
           ("schedule p50", "schedule_ms_p50"), ("write p50", "write_ms_p50"),
           ("cycle p50", "cycle_ms_p50"), ("cycle p99", "cycle_ms_p99"), ("p99/period", "p99_per_period"),
           ("CPU p50", "cpu_ms_p50"), ("CPU p99", "cpu_ms_p99"), ("write CPU p50", "write_cpu_ms_p50"),
           ("outside session p50", "outside_ms_p50"), ("outside session p99", "outside_ms_p99"),
           ("outside CPU p50", "outside_cpu_ms_p50"), ("outside CPU p99", "outside_cpu_ms_p99"),
           ("full loads", "full_loads"), ("task rows read", "task_rows_applied"),
           ("placements/s", "placements_per_s"), ("raw SELECT", "raw_select_ms"),
           ("raw COPY", "raw_copy_ms"), ("raw UPDATE", "raw_update_ms"),
           ("load/SELECT", "load_vs_select"), ("write/COPY", "write_vs_copy"),
           ("write/UPDATE", "write_vs_update"), ("peak RSS MB", "peak_rss_mb")]


SPLIT_COLUMNS = [("size", "size"), ("churn", "churn"), ("task rows read", "rows"), ("CPU p50", "cpu"),
                 ("churn/10: rows", "rows_quiet"), ("churn/10: CPU p50", "cpu_quiet"),
                 ("with the cluster", "fixed_ms"), ("per 1k rows", "per_1k_rows_ms"),
                 ("with the change", "change_ms"), ("change share", "change_share"),
                 ("CPU ratio", "cpu_ratio")]


def split(busy: dict[str, Any], quiet: dict[str, Any]) -> dict[str, Any]:
    """How much of a steady cycle's CPU scales with the cluster and how much with the change:
    the same case at two churn rates, a line through (task rows read, CPU p50) of each; the
    intercept is what a cycle costs with nothing changed, the slope what each changed row adds."""
    rows, rows_q = busy["task_rows_applied"], quiet["task_rows_applied"]
    cpu, cpu_q = busy["cpu_ms_p50"], quiet["cpu_ms_p50"]
    per_row = (cpu - cpu_q) / (rows - rows_q) if rows != rows_q else 0.0
    fixed = cpu - per_row * rows
    return {"size": busy["size"], "churn": busy["churn"], "rows": rows, "cpu": cpu, "rows_quiet": rows_q,
            "cpu_quiet": cpu_q, "fixed_ms": round(fixed, 1), "per_1k_rows_ms": round(per_row * 1e3, 1),
            "change_ms": round(per_row * rows, 1),
            "change_share": round(per_row * rows / cpu, 2) if cpu else None,
            "cpu_ratio": round(cpu / cpu_q, 2) if cpu_q else None}


def limit_lines(rows: list[dict[str, Any]], compared: list[tuple[str, str]]) -> str:
    """One line per compared case: the cycle with Volcano's feasible-node search limit against
    every node (schedule p50, cycle p50/p99, CPU p50, placements per cycle); printed and returned."""
    by_case = {(r["size"], r["scenario"]): r for r in rows}
    lines = []
    for size, scenario in compared:
        on, off = by_case[(size, scenario)], by_case[(size, scenario + NO_LIMIT)]

        def ratio(key: str, on: dict[str, Any] = on, off: dict[str, Any] = off) -> str:
            return f"{on[key]} vs {off[key]} ({on[key] / off[key]:.2f}x)" if off[key] else f"{on[key]} vs 0"

        lines.append(f"- {size} {scenario}: schedule p50 {ratio('schedule_ms_p50')} ms; cycle p50 "
                     f"{ratio('cycle_ms_p50')}, p99 {ratio('cycle_ms_p99')} ms; "
                     f"CPU p50 {ratio('cpu_ms_p50')} ms; "
                     f"placed/cycle {on['placed_per_cycle']} vs {off['placed_per_cycle']}")
    text = "\n".join(lines)
    if text:
        print("\nFeasible-node search limit on PostgreSQL (Volcano's defaults vs every node):\n" + text)
    return "\nFeasible-node search limit (Volcano's defaults vs every node):\n" + text + "\n" if text else ""


def _run_isolated(size: str, scenario: str, args: argparse.Namespace, rate: float) -> dict[str, Any] | None:
    out = subprocess.run([sys.executable, "-m", "schedweb.bench.db_bench", "--case", f"{size}:{scenario}",
                          "--seed", str(args.seed), "--cycles", str(args.cycles), "--churn", str(rate)],
                         capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Command line: each case in a subprocess; table on stdout, JSON under var/bench/."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="S,M")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--extra", default="L:fill,L:steady")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cycles", type=int, default=0, help="override the cycles per case (0 = defaults)")
    p.add_argument("--json", default="var/bench")
    p.add_argument("--churn", type=float, default=CHURN,
                   help="steady: share of the running tasks replaced per cycle")
    p.add_argument("--split", action="store_true",
                   help="run each steady case again at a tenth of the churn: what scales with the change")
    p.add_argument("--compare-limit", default="", metavar="SIZE:SCENARIO,...",
                   help="also run these cases without the feasible-node search limit (e.g. L:fill,L:steady)")
    p.add_argument("--case", help=argparse.SUPPRESS)
    p.add_argument("--profile", metavar="SIZE:SCENARIO",
                   help="profile one cycle of the case instead (after --cycles warm ones, default 1)")
    args = p.parse_args(argv)
    if args.profile:
        setup_django()
        print(profile_case(*args.profile.split(":"), seed=args.seed, warm=args.cycles or 1))
        return 0
    if args.case:
        setup_django()
        size, scenario = args.case.split(":")
        print(json.dumps(run_case(size, scenario, args.seed, args.cycles or None, args.churn)))
        return 0
    rows, splits = [], []
    compared = selected_cases(p, "", "", args.compare_limit)
    cases = selected_cases(p, args.sizes, args.scenarios, args.extra)
    cases += [c for c in compared if c not in cases] + [(size, sc + NO_LIMIT) for size, sc in compared]
    for size, scenario in cases:
        row = _run_isolated(size, scenario, args, args.churn)
        if row is None:
            return 1
        rows.append(row)
        print(f"  done {size}:{scenario} cycle p99 {rows[-1]['cycle_ms_p99']} ms", file=sys.stderr)
        if args.split and scenario == "steady":  # not for a no-limit run
            quiet = _run_isolated(size, scenario, args, args.churn / 10)
            if quiet is None:
                return 1
            splits.append(split(row, quiet))
    table = print_table("Full cycle on PostgreSQL (ms; floors: raw psycopg, same data)", COLUMNS, rows)
    if splits:
        table += print_table("Steady cycle CPU: with the cluster (nothing changed) and with the change "
                             "(ms; the same case at a tenth of the churn)", SPLIT_COLUMNS, splits)
    table += limit_lines(rows, compared)
    table += check_targets("db", [r for r in rows if not r["scenario"].endswith(NO_LIMIT)])
    if args.json:
        print(f"JSON: {write_json(Path(args.json), 'db', {'machine': machine(), 'cases': rows}, table)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The forecast as the site runs it, on PostgreSQL: load, queue runtimes, forecast, store.

    python -m schedweb.bench.forecast_bench [--sizes M] [--seed 1] [--json var/bench]

Each size's steady cluster (scheduler_core.bench.generator) is COPY'd into the benchmark database
(BENCH_DATABASE_URL, as db_bench), then `schedweb.scheduling.forecast_task.run_forecast()` runs
three times: as generated (no task declares a duration: whatever waits on running work is
`unknown`), then with a declared duration on every job (5 min to 1 h, seeded by job id; running
tasks part-way through it) under the configured CPU budget (FORECAST_CPU_BUDGET_S) and under a
long one (`--long-budget`, default 30 s: how far more CPU takes it). The table gives the run's
own split (ForecastRun: load, forecast wall and CPU, store), the waiting jobs by basis, the
simulated cycles and why the forecast stopped. Target: the M forecast (the engine's part) within
1 s on these machines, every waiting job answered (issue 20).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

DURATIONS = (300, 600, 900, 1200, 1800, 2700, 3600)
TARGET_FORECAST_S = {"M": 1.0}
COLUMNS = [("size", "size"), ("durations", "durations"), ("budget s", "budget_s"), ("waiting", "jobs"),
           ("declared", "declared"), ("history", "history"), ("unknown", "unknown"),
           ("beyond", "beyond_horizon"), ("never", "never"), ("cycles", "cycles"), ("stop", "stop"),
           ("load ms", "load_ms"), ("forecast ms", "forecast_ms"), ("forecast CPU ms", "cpu_ms"),
           ("store ms", "store_ms"), ("total ms", "total_ms")]


def declare_durations(conn: Any, now: Any) -> int:
    """Every job gets a duration from DURATIONS (by job id); its running tasks started part-way
    through it (by job id too), so they end within (now, now + duration]. Returns tasks changed."""
    with conn.cursor() as cur:
        cur.execute(
            "UPDATE core_task t SET duration = d.duration, "
            "started = CASE WHEN t.status IN ('Running', 'Binding', 'Bound') "
            "THEN %s - make_interval(secs => d.duration * ((t.job_id * 37) %% 100) / 100.0) END "
            "FROM (SELECT id, (%s::int[])[1 + id %% %s] AS duration FROM core_job) AS d "
            "WHERE d.id = t.job_id", [now, list(DURATIONS), len(DURATIONS)])
        changed = cur.rowcount
    conn.commit()
    return changed


def _row(size: str, durations: str, budget: float, run: Any) -> dict[str, Any]:
    from schedweb.scheduling.models import JobForecast

    counts = {basis: 0 for basis in ("declared", "history", "unknown", "beyond_horizon", "never")}
    for basis in JobForecast.objects.values_list("estimate_basis", flat=True):
        counts[basis] = counts.get(basis, 0) + 1
    return {"size": size, "durations": durations, "budget_s": budget or "none", "jobs": run.jobs, **counts,
            "cycles": run.cycles, "stop": run.stop, "load_ms": round(run.load_seconds * 1e3, 1),
            "forecast_ms": round(run.forecast_seconds * 1e3, 1), "cpu_ms": round(run.cpu_seconds * 1e3, 1),
            "store_ms": round(run.store_seconds * 1e3, 1),
            "total_ms": round((run.load_seconds + run.forecast_seconds + run.store_seconds) * 1e3, 1),
            "errors": run.errors}


def run_case(size: str, seed: int = 1, conn: Any = None, long_budget: float = 30.0) -> list[dict[str, Any]]:
    """The three runs of one size (Django set up by the caller; `conn`: a psycopg connection to
    Django's database, default a new one to the benchmark database; `long_budget` 0 = none)."""
    from contextlib import nullcontext

    import psycopg
    from django.conf import settings
    from django.utils import timezone

    from scheduler_core.bench.generator import build_world
    from schedweb.bench.db_bench import reset
    from schedweb.bench.dbdata import bench_url
    from schedweb.scheduling.forecast_task import run_forecast

    world = build_world(size, "steady", seed)
    configured = float(settings.FORECAST_CPU_BUDGET_S)
    rows = []
    with (psycopg.connect(bench_url()) if conn is None else nullcontext(conn)) as db:
        reset(db, world.spec)
        cases = [("none", configured), ("declared", configured), ("declared", long_budget)]
        for durations, budget in cases:
            now = timezone.now()
            if durations == "declared":
                declare_durations(db, now)
            settings.FORECAST_CPU_BUDGET_S = budget
            try:
                run = run_forecast(now=now)
            finally:
                settings.FORECAST_CPU_BUDGET_S = configured
            rows.append(_row(size, durations, budget, run))
    return rows


def targets(rows: list[dict[str, Any]]) -> str:
    """The issue's target per size, against the declared-durations run under the budget."""
    lines = []
    for size, limit in TARGET_FORECAST_S.items():
        for row in rows:
            if row["size"] == size and row["durations"] == "declared":
                got = row["forecast_ms"] / 1e3
                lines.append(f"target {size} forecast <= {limit:g} s (budget {row['budget_s']}): "
                             f"{got:.3f} s, {row['declared']} of {row['jobs']} answered "
                             f"({'met' if got <= limit and row['stop'] == 'answered' else 'missed'}; "
                             f"stop: {row['stop']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: table on stdout, JSON under var/bench/ (`forecast-db-<stamp>.json`)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="M")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default="var/bench")
    p.add_argument("--long-budget", type=float, default=30.0, help="CPU seconds of the third run (0 = none)")
    args = p.parse_args(argv)
    from schedweb.bench.db_bench import setup_django

    setup_django()
    from scheduler_core.bench.report import machine, print_table, write_json

    started = time.perf_counter()
    rows = [row for size in args.sizes.split(",") if size
            for row in run_case(size, args.seed, long_budget=args.long_budget)]
    table = print_table("Forecast on PostgreSQL (run_forecast: load, forecast, store)", COLUMNS, rows)
    lines = targets(rows)
    if lines:
        print(lines)
        table += "\n" + lines
    failed = [r for r in rows if r["errors"]]
    for row in failed:
        print(f"error: {row['size']} {row['durations']}: {row['errors']}")
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        written = write_json(Path(args.json), "forecast-db", {"machine": machine(), "cases": rows}, table)
        print(f"JSON: {written}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

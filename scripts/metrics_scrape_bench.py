"""Scrape latency of /metrics through the server, prerendered body vs live render, in one run.

    .venv/bin/python scripts/metrics_scrape_bench.py [--rounds 60] [--postgres URL]

For the SQLite demo (a temporary directory) and, with --postgres (or BENCH_DATABASE_URL), a
PostgreSQL database (dropped and created again: give one of your own), it sets the demo up as
scripts/prometheus_soak.py does (a day of history: 43,200 cycle rows), starts `run_scheduler`
and two `runserver`s on the same database: "new" serves the body each cycle prerenders, "old"
runs with the METRICS_PRERENDER setting off and renders every scrape live (the previous release's path). The
rounds alternate old and new (which goes first alternates too), 0.5 s apart, with the
scheduler cycling meanwhile; it prints each side's median, p99 and max in milliseconds and the
ratio of medians. Timings are ratios within one run: the machine's load moves both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prometheus_soak as soak  # noqa: E402


def recreate_postgres(url: str) -> None:
    """Drop and create the database of `url` (connecting to the server's `postgres` database)."""
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def measure(url: str) -> float:
    began = time.perf_counter()
    status, _ = soak.get(url)
    if status != 200:
        raise RuntimeError(f"{url}: HTTP {status}")
    return (time.perf_counter() - began) * 1e3


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "p99": round(soak.pct(values, 0.99), 1),
            "max": round(max(values), 1)}


def bench(database_url: str, rounds: int, ports: tuple[int, int], workdir: Path) -> dict:
    env = soak.demo_env(database_url)
    soak.prepare(env)
    # The old side: a settings module of its own with prerendering off (a Django setting).
    (workdir / "bench_live_settings.py").write_text(
        "from schedweb.settings import *  # noqa: F403\nMETRICS_PRERENDER = False\n")
    old_env = {**env, "DJANGO_SETTINGS_MODULE": "bench_live_settings",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(workdir), env.get("PYTHONPATH")]))}
    logs = open(workdir / "bench.log", "ab")  # noqa: SIM115
    procs = [subprocess.Popen([*soak.MANAGE, "run_scheduler"], env=env, cwd=soak.ROOT, stdout=logs,
                              stderr=subprocess.STDOUT)]
    try:
        for port, side_env in zip(ports, (env, old_env), strict=True):
            procs.append(subprocess.Popen([*soak.MANAGE, "runserver", "--noreload", f"127.0.0.1:{port}"],
                                          env=side_env, cwd=soak.ROOT, stdout=logs, stderr=subprocess.STDOUT))
        for port in ports:
            soak.wait_for(f"http://127.0.0.1:{port}/healthz?live=1", 120)
        time.sleep(6)  # a few cycles: the body is there
        urls = {"new": f"http://127.0.0.1:{ports[0]}/metrics", "old": f"http://127.0.0.1:{ports[1]}/metrics"}
        for url in urls.values():
            measure(url)
        times: dict[str, list[float]] = {"new": [], "old": []}
        for i in range(rounds):
            for side in ("new", "old") if i % 2 == 0 else ("old", "new"):
                times[side].append(measure(urls[side]))
                time.sleep(0.25)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)
        logs.close()
    out = {side: summary(values) for side, values in times.items()}
    out["old_over_new_median"] = round(out["old"]["median"] / out["new"]["median"], 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--postgres", default=os.environ.get("BENCH_DATABASE_URL"),
                        help="a PostgreSQL URL of your own (dropped and created again)")
    parser.add_argument("--ports", type=int, nargs=2, default=(8741, 8742))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    workdir = Path(tempfile.mkdtemp(prefix="schedweb-scrape-bench-"))
    results = {"sqlite": bench(f"sqlite:///{workdir / 'schedweb.sqlite3'}", args.rounds, args.ports, workdir)}
    print("sqlite", json.dumps(results["sqlite"]), flush=True)
    if args.postgres:
        recreate_postgres(args.postgres)
        results["postgresql"] = bench(args.postgres, args.rounds, args.ports, workdir)
        print("postgresql", json.dumps(results["postgresql"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

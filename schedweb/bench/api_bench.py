"""API latency under load while scheduling cycles run: gunicorn on 127.0.0.1, wrk as the load.

    python -m schedweb.bench.api_bench [--size M] [--seconds 15] [--load wrk|python]

Loads the size's steady cluster into the benchmark database, starts gunicorn (gthread) on a
free loopback port and a cycle loop in a subprocess (cycle, agent step, 1% churn, repeat, back
to back: one core stays busy with scheduling), then measures GET /api/v1/queues/tree/ at 16
concurrent clients and GET /api/v1/jobs/?phase=Pending at 64, each client a keep-alive
connection sending its next request when the last answer arrived, for `--seconds` each.

`--fast-path off` runs the server without schedweb.api.fastpath (API_FAST_PATH=0). With Redis
(`--redis`, default BENCH_REDIS_URL) the cycle loop builds the wanted bodies after each cycle
(schedweb.api.prebuild) and reports how long that took; without it each worker computes its own.

The load is wrk (Debian's package; `make bench` installs it): one C thread whose own CPU and
timing stay out of the figures. Without wrk, Python client threads do it (`--load python`, also
bounded by `--requests` per client); their latencies include their own wait for the GIL, so
the table says which load measured it. Loopback only; every process started here is stopped here.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.report import check_targets, machine, print_table, write_json
from scheduler_core.bench.session_bench import pct
from schedweb.bench.db_bench import reset, setup_django
from schedweb.bench.dbdata import bench_url, churn, start_bound

ENDPOINTS = (("queue tree", "/api/v1/queues/tree/", 16), ("pending jobs", "/api/v1/jobs/?phase=Pending", 64))


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(redis_url: str | None = None, fast_path: bool | None = None) -> dict[str, str]:
    """Environment of the bench's gunicorn and cycle loop: bench database, no throttling nor
    waiting-jobs limits, no DEBUG.

    Redis (the shared cache of production: API bodies built once by the cycle loop, throttle
    counts) when `redis_url` (default BENCH_REDIS_URL) is set, else none (each worker caches for
    itself). `fast_path` sets API_FAST_PATH (None: the settings' default).
    """
    env = dict(os.environ, DATABASE_URL=bench_url(), DEBUG="0", ALLOWED_HOSTS="127.0.0.1",
               SECRET_KEY=os.environ.get("SECRET_KEY") or "bench-only-not-a-secret",
               API_THROTTLE_USER="100000000/minute", DJANGO_SETTINGS_MODULE="schedweb.settings",
               # The submission bench measures throughput: its tens of thousands of waiting jobs
               # are the point, not an abuse (README "Input limits").
               MAX_PENDING_JOBS_PER_USER="0", MAX_PENDING_JOBS_PER_QUEUE="0")
    env.pop("REDIS_URL", None)
    redis_url = redis_url if redis_url is not None else os.environ.get("BENCH_REDIS_URL")
    if redis_url:
        env["REDIS_URL"] = redis_url
    if fast_path is not None:
        env["API_FAST_PATH"] = "1" if fast_path else "0"
    return env


def start_gunicorn(port: int, workers: int, threads: int, worker_class: str = "gthread",
                   env: dict[str, str] | None = None, stderr: Any = None) -> subprocess.Popen:
    """gunicorn (gthread by default) on 127.0.0.1:port; returns once /healthz answers (or raises)."""
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("gunicorn")), "schedweb.wsgi:application",
         "-c", "python:schedweb.gunicorn_conf", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
         "--threads", str(threads), "-k", worker_class,
         "--keep-alive", "30", "--log-level", "warning"], env=env or server_env(), stderr=stderr)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status in (200, 503):  # 503: answering, no scheduler running
                return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("gunicorn did not answer /healthz within 30 s")


def cycle_loop(size: str, seed: int, seconds: float, prebuild_on: bool = True) -> None:
    """Child mode: cycles (agent step + churn between) until `seconds` elapsed or SIGTERM; prints
    the count, the cycles' wall clock and the bodies prebuilt after them (count, ms)."""
    setup_django()
    import psycopg
    from django.conf import settings

    settings.API_PREBUILD = prebuild_on

    from schedweb.api import prebuild
    from schedweb.scheduling.cycle import cycle_run

    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    built: list[tuple[int, float]] = []
    after_cycle = prebuild.after_cycle

    def timed() -> int:  # cycle_run calls it after each commit: measured here, not in the cycle
        began = time.perf_counter()
        count = after_cycle()
        built.append((count, (time.perf_counter() - began) * 1e3))
        return count

    prebuild.after_cycle = timed
    world = build_world(size, "steady", seed + 1)  # its own rng stream for the churn
    world.seq = 10_000_000  # new job names never collide with the loaded ones
    walls: list[float] = []
    end = time.monotonic() + seconds
    with psycopg.connect(bench_url()) as conn:
        while time.monotonic() < end and not stop:
            began = time.perf_counter()
            cycle_run()
            walls.append((time.perf_counter() - began) * 1e3)
            start_bound(conn)
            churn(conn, world)
    prebuilt = [ms for count, ms in built if count]
    print(json.dumps({"cycles": len(walls), "cycle_p50_ms": round(pct(walls, 50), 1),
                      "bodies_prebuilt": sum(count for count, _ in built),
                      "prebuild_p50_ms": round(pct(prebuilt, 50), 1),
                      "prebuild_max_ms": round(max(prebuilt), 1) if prebuilt else 0.0}))


def client(path: str, token: str, port: int, count: int, end: float, out: list[float],
           errors: list[str]) -> None:
    """One client: up to `count` GETs on a keep-alive connection before `end`; latencies in ms."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    for _ in range(count):
        if time.monotonic() > end:
            break
        t = time.perf_counter()
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
        except (OSError, http.client.HTTPException) as exc:
            errors.append(type(exc).__name__)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        if resp.status != 200:
            errors.append(str(resp.status))
        out.append((time.perf_counter() - t) * 1e3)
    conn.close()


def measure(path: str, token: str, port: int, clients: int, count: int, seconds: float) -> dict[str, Any]:
    """`clients` concurrent clients; p50 / p99 / max latency (ms), requests, errors, req/s."""
    lat: list[float] = []
    errors: list[str] = []
    end = time.monotonic() + seconds
    wall = run_threads([threading.Thread(target=client, args=(path, token, port, count, end, lat, errors))
                        for _ in range(clients)])
    return {"clients": clients, **latency_row(lat, errors, wall)}


def run_threads(threads: list[threading.Thread]) -> float:
    """Start the client threads together and wait for all of them; the wall time in seconds."""
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def latency_row(lat: list[float], errors: list[str], wall: float) -> dict[str, Any]:
    """Requests, errors (counted by kind), p50 / p99 / max latency (ms) and requests per second."""
    kinds: dict[str, int] = {}
    for kind in errors:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"requests": len(lat), "errors": len(errors), "error_kinds": kinds,
            "p50_ms": round(pct(lat, 50), 1), "p99_ms": round(pct(lat, 99), 1),
            "max_ms": round(max(lat), 1) if lat else 0.0, "req_per_s": round(len(lat) / wall, 1)}


_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def _wrk_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * _WRK_UNITS[unit]


def measure_wrk(path: str, token: str, port: int, clients: int, seconds: float) -> dict[str, Any]:
    """wrk with `clients` connections for `seconds`: the same figures as measure()."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "30s",
         "-H", f"Authorization: Token {token}", "-H", "Accept: application/json",
         f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    try:
        return {"clients": clients, **parse_wrk(out)}
    except (KeyError, AttributeError) as exc:
        raise RuntimeError(f"wrk output not understood ({exc!r}):\n{out}") from exc


def parse_wrk(out: str) -> dict[str, Any]:
    """Requests, errors by kind, p50 / p99 / max latency (ms) and req/s from `wrk --latency` output."""
    pcts = dict(re.findall(r"^\s+(50|99)(?:\.0+)?%\s+(\S+)\s*$", out, re.M))
    max_ms = re.search(r"^\s+Latency\s+\S+\s+\S+\s+(\S+)", out, re.M).group(1)
    kinds: dict[str, int] = {}
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        kinds["non-2xx"] = int(m.group(1))
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out):
        for name, n in zip(("connect", "read", "write", "timeout"), m.groups(), strict=True):
            if int(n):
                kinds[name] = int(n)
    return {"requests": int(re.search(r"(\d+) requests in", out).group(1)), "errors": sum(kinds.values()),
            "error_kinds": kinds, "p50_ms": round(_wrk_ms(pcts["50"]), 1),
            "p99_ms": round(_wrk_ms(pcts["99"]), 1), "max_ms": round(_wrk_ms(max_ms), 1),
            "req_per_s": round(float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), 1)}


def reader_computes(log: Any) -> dict[str, int]:
    """Bodies the web workers computed, by path, from their DEBUG log (schedweb.api.cache);
    the log's other lines above DEBUG go to stderr."""
    log.seek(0)
    counts: dict[str, int] = {}
    for line in log:
        if m := re.search(r" computed GET (\S+) for .* \(reader\)$", line):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        elif " DEBUG " not in line:
            sys.stderr.write(line)
    return counts


def server_fast_path_default() -> bool:
    """The settings' API_FAST_PATH (what the server runs without --fast-path)."""
    from django.conf import settings

    return bool(settings.API_FAST_PATH)


def make_token() -> str:
    """A fresh API token of a bench user (created once)."""
    from django.contrib.auth import get_user_model

    from schedweb.api.services import token_create

    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    return token_create(user=user, name=f"bench-{time.time_ns()}")[1]


def serve_and_measure(args: argparse.Namespace, env: dict[str, str], token: str,
                      port: int) -> tuple[list[dict[str, Any]], str | None, dict[str, int]]:
    """Start gunicorn and the cycle loop, measure every endpoint, stop both: (rows, the cycle
    loop's summary, bodies the web workers computed by path)."""
    cycler = None
    rows: list[dict[str, Any]] = []
    # The workers log each body they compute (schedweb.api.cache, DEBUG): counted at the end.
    with tempfile.TemporaryFile("w+") as server_log:
        server = start_gunicorn(port, args.workers, args.threads, args.worker_class,
                                {**env, "LOG_LEVEL": "DEBUG"}, server_log)
        try:
            budget = (2 * args.seconds + 10) * len(ENDPOINTS) + 30  # warm-up, 1 client, n clients
            if not args.no_cycles:
                cycler = subprocess.Popen(
                    [sys.executable, "-m", "schedweb.bench.api_bench", "--cycler", "--size", args.size,
                     "--seed", str(args.seed), "--seconds", str(budget),
                     *(["--no-prebuild"] if args.no_prebuild else [])], env=env,
                    stdout=subprocess.PIPE, text=True)
            for name, path, clients in ENDPOINTS:
                measure(path, token, port, args.workers, 2, 10)  # warm the workers' connections and caches
                # One client first: the service time, without queueing behind other clients.
                for n in ((clients,) if args.skip_single else (1, clients)):
                    got = (measure_wrk(path, token, port, n, args.seconds) if args.load == "wrk"
                           else measure(path, token, port, n, args.requests, args.seconds))
                    rows.append({"endpoint": name, "path": path, "size": args.size, "load": args.load, **got})
                    print(f"  done {name} x{n}: p99 {got['p99_ms']} ms, errors {got['error_kinds']}",
                          file=sys.stderr)
        finally:
            cycles = None
            if cycler is not None:
                cycler.terminate()
                out, _ = cycler.communicate(timeout=60)
                cycles = out.strip() or None
            server.terminate()
            server.wait(timeout=30)
            computes = reader_computes(server_log)
    return rows, cycles, computes


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="M")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--requests", type=int, default=20, help="requests per client (bound; python load only)")
    p.add_argument("--seconds", type=float, default=15.0, help="per endpoint and client count")
    p.add_argument("--load", choices=("wrk", "python"), default="wrk" if shutil.which("wrk") else "python")
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers (docker-compose's default)")
    p.add_argument("--threads", type=int, default=4, help="threads per worker (docker-compose's default)")
    p.add_argument("--worker-class", default="gthread", help="gunicorn -k (sync = docker-compose's default)")
    p.add_argument("--no-cycles", action="store_true", help="measure without cycles running")
    p.add_argument("--fast-path", choices=("on", "off"), default=None,
                   help="API_FAST_PATH for the server (default: the settings' default)")
    p.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL") or "",
                   help="REDIS_URL of the server and cycle loop (default BENCH_REDIS_URL; empty: none)")
    p.add_argument("--skip-single", action="store_true", help="only the many-client rows")
    p.add_argument("--no-prebuild", action="store_true", help="the cycle loop builds no API body")
    p.add_argument("--json", default="var/bench")
    p.add_argument("--cycler", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cycler:
        cycle_loop(args.size, args.seed, args.seconds, not args.no_prebuild)
        return 0
    setup_django()
    import psycopg

    with psycopg.connect(bench_url()) as conn:
        reset(conn, build_world(args.size, "steady", args.seed).spec)
    token = make_token()
    port = free_port()
    fast_path = None if args.fast_path is None else args.fast_path == "on"
    env = server_env(args.redis, fast_path)
    if args.redis:  # no wanted list of an earlier run (another port): as the server names the keys
        from django.core.cache.backends.redis import RedisCache

        from schedweb.api import prebuild

        RedisCache(args.redis, {}).delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])
    rows, cycles, computes = serve_and_measure(args, env, token, port)
    cycles_on = not args.no_cycles
    fast_on = fast_path if fast_path is not None else server_fast_path_default()
    for r in rows:
        r["cycles_running"] = cycles_on
        r["reader_computes"] = computes.get(r["path"], 0)  # over the run: warm-up and every client count
        r["fast_path"] = fast_on
        r["redis"] = bool(args.redis)
        r["prebuild"] = bool(args.redis) and not args.no_prebuild
    server_desc = (f"gunicorn {args.workers}x{args.threads} {args.worker_class}, load {args.load}, "
                   f"{'Redis cache' if args.redis else 'no Redis'}, fast path {'on' if fast_on else 'off'}")
    table = print_table(f"API latency (size {args.size}, {server_desc}, cycles running: {cycles_on})",
                [("endpoint", "endpoint"), ("clients", "clients"), ("requests", "requests"),
                 ("errors", "errors"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"), ("max ms", "max_ms"),
                 ("req/s", "req_per_s"), ("bodies computed by readers", "reader_computes")], rows)
    if cycles:
        print(f"Cycle loop: {cycles}")
        table += f"\nCycle loop: {cycles}\n"
    table += check_targets("api", rows)
    if args.json:
        path = write_json(Path(args.json), "api", {"machine": machine(), "cycler": cycles, "cases": rows},
                          table)
        print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

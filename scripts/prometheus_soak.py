"""Acceptance run of /metrics (issue 28): a real Prometheus scrapes the SQLite demo every 5 s.

    .venv/bin/python scripts/prometheus_soak.py [--minutes 10] [--port 8731] [--prometheus-port 8732]

Sets up the demo as `make run` does (DEBUG, simulated agent, demo arrivals, SQLite in a temporary
directory, `run_scheduler` next to `runserver`), inserts a day of cycle history (43,200 CycleRun
rows at the 2 s period, timings included), starts /usr/bin/prometheus scraping /metrics every
5 s, and polls `GET /api/v1/queues/` every second meanwhile. At the end it asks Prometheus for
every scrape's `scrape_duration_seconds`, `up`, and `resets()` of every counter and histogram
series over the run, and prints a JSON summary (also written to DIR/summary.json).

Passes (exit 0) when: every scrape took under 100 ms and none failed, no API poll answered 503
(or failed), the scheduler process never exited, and no counter reset. Exit 1 otherwise; exit 2
on bad arguments or when Prometheus is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
PROMETHEUS = "/usr/bin/prometheus"
SCRAPE_LIMIT_S = 0.1
# Counter and histogram series: *_total, histogram parts (gauges named *_count are Volcano's
# pod group and unscheduled counts, which may go down: only histograms' _count here).
COUNTER_SERIES = ('{job="schedweb",__name__=~".+_total|.+_bucket|.+_sum|'
                  '.+_(milliseconds|seconds)_count"}')

SETUP = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from schedweb.api.services import token_create
from schedweb.scheduling.models import CycleRun

now = timezone.now()
timing = json.dumps({"screen_s": 0.001, "action_enqueue_s": 0.002, "action_allocate_s": 0.03,
                     "action_backfill_s": 0.001, "plugin_drf_open_s": 0.001, "session_s": 0.04})
table = CycleRun._meta.db_table
rows = [(connection.ops.adapt_datetimefield_value(now - timedelta(seconds=2 * (43200 - i))), False, timing,
         False, False) for i in range(43200)]
with connection.cursor() as cursor:
    cursor.executemany(
        f"INSERT INTO {table} (started, skipped, load_seconds, schedule_seconds, write_seconds, "
        "duration_seconds, binds, pipelined, evictions, pending_jobs, conflicts, errors, warnings, "
        "rescheduling_ran, job_errors, agent_error, timing, pending_tasks, scores_recorded) "
        "VALUES (%s, %s, 0.1, 0.2, 0.1, 0.4, 3, 0, 0, 2, 0, '', '[]', %s, 0, '', %s, 0, %s)",
        [(at, skipped, ran, timing, scores) for at, skipped, timing, ran, scores in rows])
user = get_user_model().objects.create_superuser(username="soak", email="", password=None)
print("TOKEN", token_create(user=user, name="soak")[1])
"""


def get(url: str, token: str | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
    """(status, body) of a GET; status 0 when the connection failed."""
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def prom_query(port: int, query: str, at: float) -> list[dict]:
    """The result vector/matrix of an instant query at `at`."""
    params = urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"})
    status, body = get(f"http://127.0.0.1:{port}/api/v1/query?{params}", timeout=30)
    if status != 200:
        raise RuntimeError(f"prometheus query {query!r}: HTTP {status}: {body[:200]!r}")
    return json.loads(body)["data"]["result"]


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if get(url, timeout=2)[0] == 200:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer 200 within {seconds:.0f} s")


def _went_down(values: list[float]) -> bool:
    """Whether a counter series decreased anywhere (what Prometheus' resets() counts)."""
    return any(b < a for a, b in zip(values, values[1:], strict=False))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


MANAGE = [PY, str(ROOT / "manage.py")]


def demo_env(database_url: str) -> dict[str, str]:
    """The environment `make run` gives the demo (no Redis: the in-process scheduler loop)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PYTEST_VERSION")}
    env.update(DEBUG="1", SIMULATED_AGENT="1", DEMO_ARRIVALS="1", DATABASE_URL=database_url,
               ALLOWED_HOSTS="127.0.0.1,localhost")
    return env


def prepare(env: dict[str, str]) -> str:
    """Migrate, load the demo, insert a day of history; an API token's key."""
    subprocess.run([*MANAGE, "migrate", "--noinput", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*MANAGE, "load_demo", "--if-empty"], env=env, check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([*MANAGE, "shell", "-c", SETUP], env=env, check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    return next(line.split()[1] for line in out.splitlines() if line.startswith("TOKEN "))


def run(minutes: float, port: int, prom_port: int, workdir: Path) -> dict:
    env = demo_env(f"sqlite:///{workdir / 'schedweb.sqlite3'}")
    manage = MANAGE
    token = prepare(env)
    procs: list[subprocess.Popen] = []
    logs = {name: open(workdir / f"{name}.log", "wb") for name in ("scheduler", "web", "prometheus")}  # noqa: SIM115
    try:
        scheduler = subprocess.Popen([*manage, "run_scheduler"], env=env, cwd=ROOT, stdout=logs["scheduler"],
                                     stderr=subprocess.STDOUT)
        procs.append(scheduler)
        web = subprocess.Popen([*manage, "runserver", "--noreload", f"127.0.0.1:{port}"], env=env, cwd=ROOT,
                               stdout=logs["web"], stderr=subprocess.STDOUT)
        procs.append(web)
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/healthz?live=1", 120)
        (workdir / "prometheus.yml").write_text(
            "global: {scrape_interval: 5s, scrape_timeout: 4s, evaluation_interval: 5s}\n"
            "scrape_configs:\n  - job_name: schedweb\n    metrics_path: /metrics\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n")
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={workdir / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
            cwd=workdir, stdout=logs["prometheus"], stderr=subprocess.STDOUT)
        procs.append(prometheus)
        wait_for(f"http://127.0.0.1:{prom_port}/-/ready", 60)
        began = time.time()
        polls: list[tuple[int, float]] = []
        health: dict[str, int] = {}
        scheduler_exit = None
        while time.time() - began < minutes * 60:
            t = time.perf_counter()
            status, _ = get(f"{base}/api/v1/queues/", token)
            polls.append((status, time.perf_counter() - t))
            if len(polls) % 5 == 0:
                status, body = get(f"{base}/healthz")
                state = json.loads(body).get("scheduler", {}).get("state", "?") if body else f"http {status}"
                health[state] = health.get(state, 0) + 1
            if scheduler.poll() is not None:
                scheduler_exit = scheduler.returncode
                break
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - t)))
        end = time.time() + 6  # the last scrape lands
        time.sleep(6)
        window = f"{int(end - began) + 5}s"
        series = prom_query(prom_port, f'scrape_duration_seconds{{job="schedweb"}}[{window}]', end)
        durations = [float(v) for _, v in series[0]["values"]] if series else []
        up = prom_query(prom_port, f'up{{job="schedweb"}}[{window}]', end)
        down = sum(1 for _, v in up[0]["values"] if float(v) != 1.0) if up else -1
        counted = prom_query(prom_port, f"{COUNTER_SERIES}[{window}]", end)
        resets = [r["metric"] for r in counted if _went_down([float(v) for _, v in r["values"]])]
        cycles = prom_query(prom_port, f'increase(schedweb_cycles_total{{job="schedweb"}}[{window}])', end)
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for log in logs.values():
            log.close()
    api_status: dict[str, int] = {}
    for status, _ in polls:
        api_status[str(status)] = api_status.get(str(status), 0) + 1
    api_ms = [s * 1e3 for _, s in polls]
    summary = {
        "minutes": round((end - 6 - began) / 60, 2),
        "scrapes": len(durations), "scrapes_failed": down,
        "scrape_ms": {"median": round(statistics.median(durations) * 1e3, 1) if durations else None,
                      "p99": round(pct(durations, 0.99) * 1e3, 1),
                      "max": round(max(durations, default=0) * 1e3, 1)},
        "scrapes_over_100ms": sum(1 for d in durations if d >= SCRAPE_LIMIT_S),
        "api_polls": len(polls), "api_status": api_status,
        "api_ms": {"median": round(statistics.median(api_ms), 1) if api_ms else None,
                   "p99": round(pct(api_ms, 0.99), 1)},
        "health_states": health, "scheduler_exit": scheduler_exit,
        "cycles_in_window": round(sum(float(r["value"][1]) for r in cycles), 1),
        "counter_series": len(counted),
        "counter_resets": resets,
    }
    summary["passed"] = bool(
        durations and summary["scrapes_over_100ms"] == 0 and down == 0
        and set(api_status) == {"200"} and scheduler_exit is None and not resets)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument("--prometheus-port", type=int, default=8732)
    parser.add_argument("--dir", type=Path, default=None,
                        help="work directory (default: a new temporary one)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or not (0 < args.port < 65536 and 0 < args.prometheus_port < 65536):
        parser.error("--minutes must be positive and the ports 1 to 65535")
    if not shutil.which(PROMETHEUS):
        print(f"prometheus_soak: {PROMETHEUS} not found (Debian package prometheus)", file=sys.stderr)
        return 2
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="schedweb-prometheus-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    summary = run(args.minutes, args.port, args.prometheus_port, workdir)
    summary["dir"] = str(workdir)
    text = json.dumps(summary, indent=2, sort_keys=True)
    (workdir / "summary.json").write_text(text + "\n")
    print(text)
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

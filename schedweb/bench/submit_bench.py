"""Submission throughput with cycles running: single and batch submits against gunicorn, with the
floor of the machine (a raw psycopg INSERT of the same rows) in the same run.

    python -m schedweb.bench.submit_bench [--size M] [--seconds 10] [--clients 1,16,64] [--batch 100]
    python -m schedweb.bench.submit_profile --size L       # where one submission's time goes

Loads the size's steady cluster into the benchmark database (BENCH_DATABASE_URL), starts
gunicorn (gthread, 2 workers x 4 threads, as docker-compose) and schedweb.bench.api_bench's cycle
loop (cycle, agent step, 1% churn, back to back: one core stays busy scheduling), waits for a
quiet window of cycles (their p99 is the baseline), then measures, each for `--seconds`:
- `single`: POST /api/v1/jobs/ of 4-task jobs (unique names) at 1, 16 and 64 keep-alive clients;
- `batch`: POST /api/v1/jobs/batch/ of `--batch` such jobs per request at the same client counts;
- `batch 1000`: one request of 1,000 jobs, three times (the issue's "accepted in 2 s").
Between cases the submitted jobs are deleted (untimed) and a cycle takes that in, so every case
starts from the loaded cluster rather than from the backlog of the cases before it.
The load is wrk with a Lua script making every job name unique (`make bench` installs wrk); else
Python client threads (`--load python`). Per case: requests, errors, jobs/s and tasks/s (the jobs
found stored afterwards / the window), p50 / p99 latency, the cycles that ran meanwhile (p99 and
worst against the quiet p99), and the ratio to the floor. The floor is measured after the quiet
window, cycles still running: for single submits our p50 over a raw psycopg INSERT of one job
and its tasks (committed, p50 of 100), for batches our time per 1,000 jobs over a raw INSERT of
1,000 jobs and their tasks in one transaction (executemany in pipeline mode, committed). Every
process started here is stopped here; the rows written are left for the next reset.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.report import machine, print_table, write_json
from scheduler_core.bench.session_bench import pct
from schedweb.bench.api_bench import (
    free_port,
    latency_row,
    parse_wrk,
    run_threads,
    server_env,
    start_gunicorn,
)
from schedweb.bench.db_bench import reset, setup_django
from schedweb.bench.dbdata import bench_url
from schedweb.bench.submit_profile import TASKS_PER_JOB, job_body, leaf_queues, submitter_token
from schedweb.core.task_spec_values import spec_digest, spec_values

TARGETS = {"single_jobs_per_s_16": 300, "single_p99_ms_16": 100, "batch_1000_s": 2.0,
           "batch_floor_ratio": 5.0}
LUA = """
local counter = 0
local queues = {%(queues)s}
local template = %(template)s
local per = %(per)d
request = function()
  local items = {}
  for k = 1, per do
    counter = counter + 1
    local name = string.format("%(prefix)s-%%d", counter)
    local body = template:gsub("@NAME@", name):gsub("@QUEUE@", queues[(counter %% #queues) + 1])
    items[k] = body
  end
  local body = per == 1 and items[1] or ('{"jobs": [' .. table.concat(items, ",") .. ']}')
  return wrk.format("POST", "%(path)s", nil, body)
end
"""


def lua_script(prefix: str, queues: list[str], per: int, path: str) -> str:
    """wrk's request() generating `per` jobs with unique names per request (round-robin leaves)."""
    template = json.dumps(job_body("@NAME@", "@QUEUE@"), separators=(",", ":"))
    return LUA % {"queues": ", ".join(json.dumps(q) for q in queues), "template": json.dumps(template),
                  "per": per, "prefix": prefix, "path": path}


def run_wrk(port: int, token: str, script: str, clients: int, seconds: float) -> dict[str, Any]:
    """wrk -t1 with the script; parse_wrk's figures."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "30s",
             "-s", f.name, "-H", f"Authorization: Token {token}", "-H", "Content-Type: application/json",
             "-H", "Accept: application/json", f"http://127.0.0.1:{port}/"],
            capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return parse_wrk(out)


def run_python(port: int, token: str, prefix: str, queues: list[str], per: int, path: str, clients: int,
               seconds: float) -> dict[str, Any]:
    """Python client threads (no wrk): the same requests; latencies include the GIL wait."""
    lat: list[float] = []
    errors: list[str] = []
    counter = iter(range(10**9))
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def body() -> bytes:
        with lock:
            ks = [next(counter) for _ in range(per)]
        jobs = [job_body(f"{prefix}-{k}", queues[k % len(queues)]) for k in ks]
        return json.dumps(jobs[0] if per == 1 else {"jobs": jobs}).encode()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        while time.monotonic() < end:
            data = body()
            t = time.perf_counter()
            try:
                conn.request("POST", path, data, headers)
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException) as exc:
                errors.append(type(exc).__name__)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            if resp.status not in (200, 201):
                errors.append(str(resp.status))
            lat.append((time.perf_counter() - t) * 1e3)

    wall = run_threads([threading.Thread(target=client) for _ in range(clients)])
    return latency_row(lat, errors, wall)


def stored_jobs(prefix: str) -> int:
    """Jobs of the bench namespace whose name starts with `prefix-`."""
    from schedweb.core.models import Job

    return Job.objects.filter(namespace="bench", name__startswith=f"{prefix}-").count()


def cycle_durations(since: float) -> list[float]:
    """Wall seconds of the cycles recorded since `since` (unix time), from their CycleRun rows."""
    import datetime as dt

    from schedweb.scheduling.models import CycleRun

    start = dt.datetime.fromtimestamp(since, dt.UTC)
    runs = CycleRun.objects.filter(started__gte=start, skipped=False)
    return list(runs.values_list("duration_seconds", flat=True))


def cycle_loop(seconds: float, rate: float = 0.01) -> None:
    """Child mode: cycles back to back until `seconds` elapsed, each followed by the agent's step
    (Binding -> Running) and ~`rate` of the running tasks' jobs finishing (api_bench's churn
    without its inserts: the submissions under test are the arrivals, and churn's explicit ids
    would collide with theirs)."""
    setup_django()
    import psycopg

    from schedweb.bench.dbdata import start_bound
    from schedweb.scheduling.cycle import cycle_run

    done, end = 0, time.monotonic() + seconds
    with psycopg.connect(bench_url()) as conn:
        while time.monotonic() < end:
            cycle_run()
            start_bound(conn)
            with conn.cursor() as cur:
                cur.execute("WITH j AS (SELECT job_id FROM core_task WHERE status = 'Running' "
                            "GROUP BY job_id ORDER BY hashint8(job_id::bigint + %s) LIMIT greatest(1, "
                            "(SELECT count(*) * %s FROM core_task WHERE status = 'Running')::int / 4)) "
                            "UPDATE core_task SET status = 'Succeeded', finished = now(), updated = now() "
                            "WHERE job_id IN (SELECT job_id FROM j) AND status = 'Running'", (done, rate))
            conn.commit()
            done += 1
    print(json.dumps({"cycles": done}))


def clear_submissions(since: float) -> None:
    """Delete the bench namespace's jobs and tasks (between cases, untimed: each case starts from
    the loaded cluster, not from the backlog the previous ones left); wait for a cycle to take it in."""
    import psycopg

    with psycopg.connect(bench_url()) as conn:
        # By id: a request still in flight may add a job meanwhile; it stays. Django's CASCADE is
        # the ORM's, so the rows that point at a job go first.
        # The jobs locked first, in id order: the project's lock order (a job before its tasks),
        # which the cycle's writes follow too; deleting tasks first deadlocked with a cycle.
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM core_job WHERE namespace = 'bench' ORDER BY id FOR UPDATE").fetchall()]
        for table in ("core_task", "scheduling_jobreasonhistory"):
            conn.execute(f"DELETE FROM {table} WHERE job_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM core_job WHERE id = ANY(%s)", (ids,))
        conn.commit()
    _first_cycle(max(since, time.time()))


def _first_cycle(since: float, timeout: float = 300) -> None:
    """Wait until the cycle loop has recorded a cycle after `since`."""
    deadline = time.monotonic() + timeout
    while not cycle_durations(since):
        if time.monotonic() > deadline:
            raise RuntimeError("the cycle loop recorded no cycle")
        time.sleep(0.5)


def raw_floor(queues: dict[str, int], jobs: int, repeat: int) -> float:
    """Seconds to INSERT `jobs` 4-task jobs and commit through raw psycopg (best of `repeat`):
    executemany of plain INSERTs in pipeline mode, jobs RETURNING id, then their tasks."""
    import psycopg

    best = float("inf")
    names = list(queues)
    with psycopg.connect(bench_url()) as conn:
        for r in range(repeat):
            prefix = f"floor{time.time_ns() % 10**9}-{r}"
            rows = [(f"{prefix}-{k}", queues[names[k % len(names)]]) for k in range(jobs)]
            t = time.perf_counter()
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO core_job (namespace, name, queue_id, min_member, min_task_member, phase, "
                    "preemptable, created, updated, reason_code, reason_message, reason_details, "
                    "idempotency_hash, passthrough) VALUES ('bench', %s, %s, 4, '{}', 'Pending', true, "
                    "now(), now(), '', '', '{}', '', '{}') RETURNING id",
                    rows, returning=True)
                ids = []
                while True:
                    ids.append(cur.fetchone()[0])
                    if not cur.nextset():
                        break
                # One pod spec per job (its labels name it), stored once as the submit path does.
                specs = [spec_values({"labels": {"app": "sweep", "job": name}}) for name, _ in rows]
                spec_ids = []
                for spec in specs:
                    cur.execute("INSERT INTO core_taskspec (digest, node_selector, tolerations, affinity, "
                                "topology_spread_constraints, labels) "
                                "VALUES (%s, '{}', '[]', NULL, '[]', %s) "
                                "ON CONFLICT (digest) DO UPDATE SET digest = EXCLUDED.digest RETURNING id",
                                (spec_digest(spec), json.dumps(spec["labels"])))
                    spec_ids.append(cur.fetchone()[0])
                task_rows = [(jid, f"{name}-{i}", sid)
                             for jid, sid, (name, _) in zip(ids, spec_ids, rows, strict=True)
                             for i in range(TASKS_PER_JOB)]
                cur.executemany(
                    "INSERT INTO core_task (job_id, name, role, request, status, spec_id, preemption_policy, "
                    "preemptable, created, updated) VALUES (%s, %s, 'worker', "
                    "'{\"cpu\": 2000.0, \"memory\": 4294967296.0}', 'Pending', %s, 'PreemptLowerPriority', "
                    "true, now(), now())", task_rows)
            conn.commit()
            best = min(best, time.perf_counter() - t)
            # Django's CASCADE is the ORM's: the tasks go first, their jobs locked before them.
            conn.execute("SELECT id FROM core_job WHERE namespace = 'bench' AND name LIKE %s ORDER BY id "
                         "FOR UPDATE", (f"{prefix}-%",))
            conn.execute("DELETE FROM core_task WHERE job_id IN (SELECT id FROM core_job WHERE namespace = "
                         "'bench' AND name LIKE %s)", (f"{prefix}-%",))
            conn.execute("DELETE FROM core_job WHERE namespace = 'bench' AND name LIKE %s", (f"{prefix}-%",))
            conn.commit()
    return best


def single_floor(queues: dict[str, int]) -> float:
    """p50 seconds of one job and its tasks inserted and committed through raw psycopg (100 runs)."""
    samples = []
    for _ in range(100):
        samples.append(raw_floor(queues, 1, 1))
    return pct(samples, 50)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="M")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10.0, help="per case")
    p.add_argument("--clients", default="1,16,64")
    p.add_argument("--batch", type=int, default=100, help="jobs per batch request")
    p.add_argument("--load", choices=("wrk", "python"), default="wrk" if shutil.which("wrk") else "python")
    p.add_argument("--no-cycles", action="store_true", help="measure without cycles running")
    p.add_argument("--quiet", type=float, default=15.0, help="seconds of cycles without submissions first")
    p.add_argument("--json", default="var/bench")
    p.add_argument("--cycler", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cycler:
        cycle_loop(args.seconds)
        return 0
    setup_django()
    import psycopg

    from schedweb.core.models import Queue

    with psycopg.connect(bench_url()) as conn:
        reset(conn, build_world(args.size, "steady", args.seed).spec)
    token, leaves = submitter_token(), leaf_queues()
    queue_ids = dict(Queue.objects.filter(name__in=leaves).values_list("name", "id"))
    port = free_port()
    server = start_gunicorn(port, 2, 4)
    cycler = None
    rows: list[dict[str, Any]] = []
    clients = [int(c) for c in args.clients.split(",")]
    try:
        if not args.no_cycles:
            budget = args.quiet + (2 * len(clients) + 1) * (args.seconds + 15) + 120
            cycler = subprocess.Popen(
                [sys.executable, "-m", "schedweb.bench.submit_bench", "--cycler", "--seconds", str(budget)],
                env=server_env(), stdout=subprocess.PIPE, text=True)
        if cycler is not None:
            _first_cycle(time.time() - 1)  # its full load is no steady cycle
        t = time.time()
        time.sleep(args.quiet)
        quiet = cycle_durations(t)
        quiet_p99 = pct(quiet, 99) if quiet else None
        # The floor under the same conditions as the cases: cycles running, gunicorn idle.
        floors = {"single_s": single_floor(queue_ids), "batch_1000_s": raw_floor(queue_ids, 1000, 3)}
        cases = [("single", "/api/v1/jobs/", 1), ("batch", "/api/v1/jobs/batch/", args.batch)]
        for name, path, per in cases:
            for n in clients:
                prefix = f"{name[0]}{n}x{time.time_ns() % 10**8}"
                started = time.time()
                got = (run_wrk(port, token, lua_script(prefix, leaves, per, path), n, args.seconds)
                       if args.load == "wrk" else
                       run_python(port, token, prefix, leaves, per, path, n, args.seconds))
                wall = time.time() - started
                rows.append(_row(name, n, per, got, stored_jobs(prefix), wall, cycle_durations(started),
                                 quiet_p99, floors, args))
                if cycler is not None:
                    clear_submissions(time.time())
                print(f"  done {name} x{n}: {rows[-1]['jobs_per_s']} jobs/s, p99 {rows[-1]['p99_ms']} ms",
                      file=sys.stderr)
        rows.append(_big_batch(port, token, leaves, quiet_p99, floors, args))
    finally:
        if cycler is not None:
            cycler.terminate()
            cycler.communicate(timeout=120)
        server.terminate()
        server.wait(timeout=30)
    return _report(rows, floors, quiet_p99, args)


def _row(name: str, clients: int, per: int, got: dict[str, Any], stored: int, wall: float,
         cycles: list[float], quiet_p99: float | None, floors: dict[str, float], args: Any) -> dict[str, Any]:
    jobs_s = stored / wall if wall else 0.0
    if name == "single":
        ratio = got["p50_ms"] / 1e3 / floors["single_s"] if floors["single_s"] else None
    else:
        per_1000 = (got["p50_ms"] / 1e3) * 1000 / per
        ratio = per_1000 / floors["batch_1000_s"] if floors["batch_1000_s"] else None
    worst = max(cycles) if cycles else None
    return {"case": name, "clients": clients, "jobs_per_request": per, "size": args.size, "load": args.load,
            "requests": got["requests"], "errors": got["errors"], "error_kinds": got["error_kinds"],
            "jobs": stored, "jobs_per_s": round(jobs_s, 1), "tasks_per_s": round(jobs_s * TASKS_PER_JOB, 1),
            "p50_ms": got["p50_ms"], "p99_ms": got["p99_ms"],
            "floor_ratio": round(ratio, 2) if ratio else None,
            "cycles": len(cycles), "cycle_p99_s": round(pct(cycles, 99), 3) if cycles else None,
            "cycle_worst_vs_quiet_p99": round(worst / quiet_p99, 2) if worst and quiet_p99 else None}


def _big_batch(port: int, token: str, leaves: list[str], quiet_p99: float | None, floors: dict[str, float],
               args: Any) -> dict[str, Any]:
    """Three requests of 1,000 jobs each (one client): how long until they are accepted."""
    took, stored, started = [], 0, time.time()
    for r in range(3):
        prefix = f"k{r}x{time.time_ns() % 10**8}"
        data = json.dumps({"jobs": [job_body(f"{prefix}-{k}", leaves[k % len(leaves)]) for k in range(1000)]})
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        t = time.perf_counter()
        conn.request("POST", "/api/v1/jobs/batch/", data.encode(),
                     {"Authorization": f"Token {token}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        took.append(time.perf_counter() - t)
        if resp.status != 201:
            raise RuntimeError(f"batch of 1000: HTTP {resp.status}")
        stored += stored_jobs(prefix)
    cycles = cycle_durations(started)
    best = min(took)
    return {"case": "batch 1000", "clients": 1, "jobs_per_request": 1000, "size": args.size, "load": "python",
            "requests": 3, "errors": 0, "error_kinds": {}, "jobs": stored,
            "jobs_per_s": round(1000 / best, 1),
            "tasks_per_s": round(1000 * TASKS_PER_JOB / best, 1), "p50_ms": round(sorted(took)[1] * 1e3, 1),
            "p99_ms": round(max(took) * 1e3, 1), "floor_ratio": round(best / floors["batch_1000_s"], 2),
            "cycles": len(cycles), "cycle_p99_s": round(pct(cycles, 99), 3) if cycles else None,
            "cycle_worst_vs_quiet_p99": round(max(cycles) / quiet_p99, 2) if cycles and quiet_p99 else None}


def _report(rows: list[dict[str, Any]], floors: dict[str, float], quiet_p99: float | None, args: Any) -> int:
    title = (f"Submissions (size {args.size}, gunicorn 2x4 gthread, load {args.load}, cycles running: "
             f"{not args.no_cycles}; floor: raw INSERT {floors['single_s'] * 1e3:.1f} ms per job, "
             f"{floors['batch_1000_s']:.2f} s per 1,000 jobs; quiet cycle p99 "
             f"{quiet_p99 if quiet_p99 is None else round(quiet_p99, 3)} s)")
    table = print_table(title, [
        ("case", "case"), ("clients", "clients"), ("requests", "requests"), ("errors", "errors"),
        ("jobs", "jobs"), ("jobs/s", "jobs_per_s"), ("tasks/s", "tasks_per_s"), ("p50 ms", "p50_ms"),
        ("p99 ms", "p99_ms"), ("/ floor", "floor_ratio"), ("cycles", "cycles"),
        ("cycle p99 s", "cycle_p99_s"),
        ("worst / quiet p99", "cycle_worst_vs_quiet_p99")], rows)
    checks = []
    single16 = next((r for r in rows if r["case"] == "single" and r["clients"] == 16), None)
    big = next((r for r in rows if r["case"] == "batch 1000"), None)
    if single16:
        checks.append(("single 16 clients jobs/s", single16["jobs_per_s"], ">=",
                       TARGETS["single_jobs_per_s_16"]))
        checks.append(("single 16 clients p99 ms", single16["p99_ms"], "<=", TARGETS["single_p99_ms_16"]))
    if big:
        checks.append(("batch of 1000 accepted in s", round(min(1000 / big["jobs_per_s"], 99), 2), "<=",
                       TARGETS["batch_1000_s"]))
        checks.append(("batch of 1000 / raw INSERT", big["floor_ratio"], "<=", TARGETS["batch_floor_ratio"]))
    worst = [r["cycle_worst_vs_quiet_p99"] for r in rows if r["cycle_worst_vs_quiet_p99"]]
    if worst:
        checks.append(("worst cycle / quiet p99", max(worst), "<=", 1.2))
    lines = [f"- {name} = {value} (target {op} {limit}): "
             f"{'met' if (value >= limit if op == '>=' else value <= limit) else 'MISSED'}"
             for name, value, op, limit in checks]
    text = "\n".join(lines)
    print("\nTargets:\n" + text)
    table += "\n" + text + "\n"
    if args.json:
        path = write_json(Path(args.json), "submit", {"machine": machine(), "floors": floors,
                                                      "quiet_cycle_p99_s": quiet_p99, "cases": rows}, table)
        print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the per-job gauges add to each cycle's /metrics render, by number of unfinished jobs.

    .venv/bin/python scripts/metrics_job_series_bench.py [--rounds 15] [--postgres URL]

Times, in one process, the part of a render the per-job series cost (schedweb.scheduling.
metrics_jobs: the cycle's record of first/last scheduling times and the newest jobs, then the
four families written as text) for 2,000 and 20,000 unfinished jobs with the default cap
(METRICS_JOB_SERIES_MAX 2,000), and 20,000 uncapped. No database: the jobs are the snapshot's
objects, as the cycle hands them over. The cases alternate, several rounds (which goes first
rotates); it prints each case's median and range in milliseconds, the body bytes they add and
the ratios of medians. Timings are ratios within one run.

With --postgres (or BENCH_DATABASE_URL; a database of your own: its tables are migrated and it
gets 4 nodes, a queue and jobs of one 16-cpu task that never fits), the whole body render
(metrics_body.render: the seven queries and every family) with 2,000 and then 20,000 unfinished
jobs, each after a cycle, alternating with and without the per-job series (a render in a
process that ran no cycle has none).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "schedweb.settings")
os.environ.setdefault("DEBUG", "1")  # no secret needed: nothing is served


def database_main(rounds: int) -> None:
    """The whole render with 2,000 and 20,000 unfinished jobs in the database."""
    import django
    from django.core.management import call_command
    from django.db import transaction

    django.setup()
    call_command("migrate", verbosity=0)
    from schedweb.core import services
    from schedweb.core.job_store import insert_drafts, load_context, resolve
    from schedweb.core.job_submission import draft_job
    from schedweb.core.models import Job
    from schedweb.scheduling import metrics_body, metrics_jobs
    from schedweb.scheduling.cycle import cycle_run

    if not Job.objects.exists():
        services.queue_create(name="q")
        for i in range(4):
            services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    out = {}
    for n in (2000, 20000):
        for start in range(Job.objects.count(), n, 1000):
            drafts = [draft_job(namespace=f"ns{i % 50}", name=f"job-{i}", queue="q",
                                tasks=[{"name": "t", "request": {"cpu": "16", "memory": "1Gi"}}])
                      for i in range(start, min(n, start + 1000))]
            ctx = load_context(drafts)
            for draft in drafts:
                resolve(draft, ctx)
            with transaction.atomic():
                insert_drafts(drafts)
        cycle_run()
        times: dict[str, list[float]] = {"with_series": [], "without": []}
        sizes = {}
        for r in range(rounds):
            for case in list(times)[::1 if r % 2 == 0 else -1]:
                kept = metrics_jobs.SERIES.cycle_id
                if case == "without":
                    metrics_jobs.SERIES.cycle_id = -1
                t0 = time.perf_counter()
                body, _ = metrics_body.render()
                times[case].append((time.perf_counter() - t0) * 1e3)
                metrics_jobs.SERIES.cycle_id = kept
                sizes[case] = len(body)
        out[n] = {case: {"median_ms": round(statistics.median(v), 1), "min_ms": round(min(v), 1),
                         "max_ms": round(max(v), 1), "body_bytes": sizes[case]} for case, v in times.items()}
    print(json.dumps(out, indent=2))


def main() -> None:
    """Run the rounds and print a JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--postgres", default=os.environ.get("BENCH_DATABASE_URL"))
    args = parser.parse_args()
    if args.postgres:
        os.environ["DATABASE_URL"] = args.postgres
        database_main(args.rounds)
        return
    import django
    from django.conf import settings

    django.setup()
    from scheduler_core.model import JobInfo
    from scheduler_core.result import SessionResult
    from schedweb.scheduling import metrics_jobs
    from schedweb.scheduling.metrics_text import exposition

    def jobs(n: int) -> tuple[list[JobInfo], SessionResult, list[str]]:
        made = [JobInfo(uid=f"ns{i % 50}/job-{i}", name=f"job-{i}", namespace=f"ns{i % 50}",
                        queue=f"q{i % 20}", created=1.7e9 + i) for i in range(n)]
        result = SessionResult()
        result.job_gauges["job_share"] = {j.uid: (i % 97) / 97 for i, j in enumerate(made)}
        return made, result, [j.uid for j in made[::3]]

    cases = {"2000": (jobs(2000), None), "20000": (jobs(20000), None), "20000-uncapped": (jobs(20000), 20000)}
    times: dict[str, list[float]] = {name: [] for name in cases}
    sizes: dict[str, int] = {}
    names = list(cases)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            (made, result, bound), cap = cases[name]
            settings.METRICS_JOB_SERIES_MAX = cap or metrics_jobs.SERIES_MAX_DEFAULT
            series = metrics_jobs.JobSeries()
            series.record(1, made, result, (), 1.7e9)  # the previous cycle: every job known
            t0 = time.perf_counter()
            series.record(2, made, result, bound, 1.7e9 + 2)
            body = exposition(metrics_jobs.families(series.rows_of(2)))
            times[name].append((time.perf_counter() - t0) * 1e3)
            sizes[name] = len(body)
    out = {name: {"median_ms": round(statistics.median(v), 2), "min_ms": round(min(v), 2),
                  "max_ms": round(max(v), 2), "body_bytes": sizes[name]} for name, v in times.items()}
    base = statistics.median(times["2000"])
    out["ratios_to_2000"] = {name: round(statistics.median(v) / base, 2) for name, v in times.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

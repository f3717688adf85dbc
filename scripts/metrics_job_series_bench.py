"""What the per-job gauges add to each cycle's /metrics render, by number of unfinished jobs.

    .venv/bin/python scripts/metrics_job_series_bench.py [--rounds 15]

Times, in one process, the part of a render the per-job series cost (schedweb.scheduling.
metrics_jobs: the cycle's record of first/last scheduling times and the newest jobs, then the
four families written as text) for 2,000 and 20,000 unfinished jobs with the default cap
(METRICS_JOB_SERIES_MAX 2,000), and 20,000 uncapped. No database: the jobs are the snapshot's
objects, as the cycle hands them over. The cases alternate, several rounds (which goes first
rotates); it prints each case's median and range in milliseconds, the body bytes they add and
the ratios of medians. Timings are ratios within one run.
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


def main() -> None:
    """Run the rounds and print a JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
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

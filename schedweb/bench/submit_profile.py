"""Where one `POST /api/v1/jobs/` spends its time: pyinstrument around requests in Django's test
client, on PostgreSQL, with a generated cluster loaded (size L by default).

    python -m schedweb.bench.submit_profile [--size L] [--requests 200] [--batch 0]

Loads the size's steady cluster into the benchmark database (BENCH_DATABASE_URL), signs in a
non-staff submitter of every top-level queue by token (the ACL path portals take), warms up,
times `--requests` single submissions of 4-task jobs without the profiler (p50 / p99 in-process:
no HTTP, no gunicorn), then profiles as many again and prints pyinstrument's call tree. With
`--batch N` it also times and profiles `POST /api/v1/jobs/batch/` of N jobs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from typing import Any

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.session_bench import pct
from schedweb.bench.db_bench import reset, setup_django
from schedweb.bench.dbdata import bench_url

TASKS_PER_JOB = 4


def job_body(name: str, queue: str, tasks: int = TASKS_PER_JOB) -> dict[str, Any]:
    """A portal's job: `tasks` identical workers (2 cpu, 4Gi), labelled, in namespace `bench`."""
    return {"namespace": "bench", "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": f"{name}-{i}", "role": "worker", "request": {"cpu": "2", "memory": "4Gi"},
                       "labels": {"app": "sweep", "job": name}} for i in range(tasks)]}


def submitter_token(username: str = "bench-submitter") -> str:
    """A token of a non-staff user who may submit into every top-level queue's subtree."""
    from django.contrib.auth import get_user_model

    from schedweb.api.services import token_create
    from schedweb.core.models import Queue

    user, _ = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": False})
    for queue in Queue.objects.filter(parent__isnull=True):
        queue.submitter_users.add(user)
    return token_create(user=user, name=f"bench-{time.time_ns()}")[1]


def leaf_queues() -> list[str]:
    """Names of the open leaf queues (sorted), where the bench submits round-robin."""
    from schedweb.core.models import Queue

    return sorted(Queue.objects.filter(children__isnull=True, state="Open").values_list("name", flat=True))


def run(size: str, requests: int, batch: int, seed: int = 1, load: bool = True) -> str:
    """Time and profile submissions in-process; returns the report text."""
    setup_django()
    import psycopg
    from django.test import Client
    from pyinstrument import Profiler

    if load:
        with psycopg.connect(bench_url()) as conn:
            reset(conn, build_world(size, "steady", seed).spec)
    token = submitter_token()
    leaves = itertools.cycle(leaf_queues())
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    prefix = f"p{time.time_ns() % 10**10}"
    seq = itertools.count()

    def post(path: str, body: Any) -> float:
        t = time.perf_counter()
        resp = client.post(path, json.dumps(body), content_type="application/json")
        took = (time.perf_counter() - t) * 1e3
        if resp.status_code != 201 and not (path.endswith("batch/") and resp.status_code == 200):
            raise RuntimeError(f"{path}: {resp.status_code} {resp.content[:500]!r}")
        return took

    def single() -> float:
        return post("/api/v1/jobs/", job_body(f"{prefix}-{next(seq)}", next(leaves)))

    for _ in range(20):
        single()
    lat = [single() for _ in range(requests)]
    out = [f"size {size}: {requests} single submissions of {TASKS_PER_JOB}-task jobs, in-process: "
           f"p50 {pct(lat, 50):.1f} ms, p99 {pct(lat, 99):.1f} ms, mean {sum(lat) / len(lat):.1f} ms"]
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for _ in range(requests):
        single()
    profiler.stop()
    out.append(profiler.output_text(unicode=False, color=False, show_all=False))
    if batch:
        def batch_body() -> dict[str, Any]:
            return {"jobs": [job_body(f"{prefix}-{next(seq)}", next(leaves)) for _ in range(batch)]}

        post("/api/v1/jobs/batch/", batch_body())
        took = [post("/api/v1/jobs/batch/", batch_body()) for _ in range(3)]
        out.append(f"batch of {batch}: best {min(took):.0f} ms, median {sorted(took)[1]:.0f} ms")
        profiler = Profiler(interval=0.0005)
        profiler.start()
        post("/api/v1/jobs/batch/", batch_body())
        profiler.stop()
        out.append(profiler.output_text(unicode=False, color=False, show_all=False))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", default="L")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--batch", type=int, default=0, help="also profile a batch of this many jobs")
    p.add_argument("--no-load", action="store_true", help="keep the database as it is (already loaded)")
    args = p.parse_args(argv)
    print(run(args.size, args.requests, args.batch, args.seed, load=not args.no_load))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

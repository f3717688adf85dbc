"""Benchmark data in PostgreSQL: a scratch database, and generated clusters COPY'd into core tables.

The benchmark database is its own (BENCH_DATABASE_URL, default `schedweb_bench` on 127.0.0.1),
created when missing and migrated; `load_spec` replaces the core tables' rows with a generated
cluster (scheduler_core.bench.generator) in stored units, through COPY so that the 150,000
tasks of size L load in seconds. Nothing here goes through the services: this is test data.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from schedweb.core.task_spec_values import SPEC_FIELDS, DigestMemo

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/schedweb_bench"
CORE_TABLES = ("core_task", "core_taskspec", "core_job", "core_node", "core_queue", "core_priorityclass")


def bench_url() -> str:
    """BENCH_DATABASE_URL, else DEFAULT_URL (never the DATABASE_URL of a running site)."""
    return os.environ.get("BENCH_DATABASE_URL") or DEFAULT_URL


def ensure_database(url: str) -> None:
    """Create the database named in `url` when it does not exist (via the `postgres` database)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')


def stored(q: dict[str, float], pods: bool = False) -> dict[str, float]:
    """Generator quantities (cores, bytes, units) -> stored units (milli-cpu, bytes, milli-units)."""
    out: dict[str, float] = {}
    for k, v in q.items():
        if k == "pods":
            if pods:
                out[k] = int(v)
        elif k == "memory":
            out[k] = v
        else:
            out[k] = v * 1000
    return out


def _ts(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def _j(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def load_spec(conn: psycopg.Connection, spec: dict[str, Any]) -> dict[str, int]:
    """Replace the core rows with the generated cluster; returns row counts per table."""
    now = _ts(spec.get("now", 0.0))
    with conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(CORE_TABLES) + " RESTART IDENTITY CASCADE")
        pcs = {name: i + 1 for i, name in enumerate(spec.get("priority_classes", {}))}
        with cur.copy("COPY core_priorityclass (id, name, value, preemption_policy, description, "
                      "global_default) FROM STDIN") as cp:
            for name, value in spec.get("priority_classes", {}).items():
                cp.write_row((pcs[name], name, value, "PreemptLowerPriority", "", False))
        nodes = {n["name"]: i + 1 for i, n in enumerate(spec["nodes"])}
        with cur.copy("COPY core_node (id, name, allocatable, labels, taints, unschedulable, created, "
                      "updated) FROM STDIN") as cp:
            for n in spec["nodes"]:
                cp.write_row((nodes[n["name"]], n["name"], _j(stored(n["allocatable"], pods=True)),
                              _j(n["labels"]), _j(n.get("taints", [])), n.get("unschedulable", False),
                              now, now))
        queues = {q["name"]: i + 1 for i, q in enumerate(x for x in spec["queues"] if x["name"] != "root")}
        with cur.copy("COPY core_queue (id, name, parent_id, weight, priority, state, reclaimable, "
                      "capability, annotations, created, updated, version) FROM STDIN") as cp:
            for q in spec["queues"]:
                if q["name"] == "root":
                    continue
                cap = q.get("capability")
                cp.write_row((queues[q["name"]], q["name"], queues.get(q.get("parent") or ""),
                              q.get("weight", 1), 0, "Open", True, _j(stored(cap)) if cap else None,
                              "{}", now, now, 1))
        counts = {"core_priorityclass": len(pcs), "core_node": len(nodes), "core_queue": len(queues)}
        counts.update(copy_jobs(cur, spec["jobs"], queues, nodes, pcs, first_job=1, first_task=1))
        for table in CORE_TABLES:
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)")
    conn.commit()
    return counts


def copy_jobs(cur: psycopg.Cursor, jobs: list[dict[str, Any]], queues: dict[str, int],
              nodes: dict[str, int], pcs: dict[str, int], first_job: int, first_task: int,
              ) -> dict[str, int]:
    """COPY jobs and their tasks with ids from `first_job` / `first_task`; returns row counts."""
    job_id, task_id = first_job, first_task
    with cur.copy("COPY core_job (id, namespace, name, queue_id, min_member, min_task_member, "
                  "min_resources, priority_class_id, phase, preemptable, created, updated, reason_code, "
                  "reason_message, reason_details, idempotency_hash, passthrough) FROM STDIN") as cp:
        for j in jobs:
            t = _ts(j["created"])
            cp.write_row((job_id, j["namespace"], j["name"], queues[j["queue"]], j["min_member"], "{}",
                          _j(stored(j["min_resources"])), pcs[j["priority_class"]],
                          j.get("phase", "Pending"), True, t, t, "", "", "{}", "", "{}"))
            job_id += 1
    job_id = first_job
    spec_of = copy_specs(cur, [task for j in jobs for task in j["tasks"]])
    with cur.copy("COPY core_task (id, job_id, name, role, request, status, node_id, spec_id, "
                  "preemption_policy, preemptable, created, updated) FROM STDIN") as cp:
        for j in jobs:
            t = _ts(j["created"])
            req = _j(stored(j["tasks"][0]["request"])) if j["tasks"] else "{}"
            for task in j["tasks"]:
                node = task.get("node")
                cp.write_row((task_id, job_id, task["name"], task.get("role", ""), req,
                              task.get("status", "Pending"), nodes[node] if node else None,
                              spec_of(task), "PreemptLowerPriority", True, t, t))
                task_id += 1
            job_id += 1
    return {"core_job": job_id - first_job, "core_task": task_id - first_task}


def copy_specs(cur: psycopg.Cursor, tasks: list[dict[str, Any]]) -> Any:
    """COPY the pod specs of `tasks` not stored yet (core_taskspec, one row per distinct spec, as
    the submit path stores them); returns task dict -> its spec id."""
    digest_of = DigestMemo()
    known = dict(cur.execute("SELECT digest, id FROM core_taskspec").fetchall())
    next_id = max(known.values(), default=0) + 1
    new: list[tuple[int, str, dict[str, Any]]] = []
    for task in tasks:
        digest, values = digest_of(task)
        if digest not in known:
            known[digest] = next_id
            new.append((next_id, digest, values))
            next_id += 1
    with cur.copy(f"COPY core_taskspec (id, digest, {', '.join(SPEC_FIELDS)}) FROM STDIN") as cp:
        for pk, digest, values in new:
            cp.write_row((pk, digest, *(None if values[f] is None else _j(values[f]) for f in SPEC_FIELDS)))
    if new:
        cur.execute("SELECT setval(pg_get_serial_sequence('core_taskspec', 'id'), %s, false)", (next_id,))
    return lambda task: known[digest_of(task)[0]]


def start_bound(conn: psycopg.Connection) -> int:
    """What the node agent does: Binding tasks start Running; returns the count."""
    with conn.cursor() as cur:
        cur.execute("UPDATE core_task SET status = 'Running', updated = now() WHERE status = 'Binding'")
        n = cur.rowcount
    conn.commit()  # job phases are the scheduler's: the next cycle turns these jobs Running
    return n


def churn(conn: psycopg.Connection, world: Any, rate: float = 0.01) -> tuple[int, int]:
    """Finish whole Running jobs (~`rate` of the running tasks), submit as many new tasks Pending.

    `world` is the generator's World (its seeded rng and job numbering go on). Returns
    (finished, submitted) task counts.
    """
    from scheduler_core.bench.generator import make_job

    rng = world.rng
    with conn.cursor() as cur:
        rows = cur.execute("SELECT job_id, count(*) FROM core_task WHERE status = 'Running' "
                           "GROUP BY job_id ORDER BY job_id").fetchall()
        target = max(1, int(sum(n for _, n in rows) * rate))
        done, finished = [], 0
        for k in rng.permutation(len(rows)):
            if finished >= target:
                break
            done.append(rows[int(k)][0])
            finished += rows[int(k)][1]
        cur.execute("UPDATE core_task SET status = 'Succeeded', finished = now(), updated = now() "
                    "WHERE job_id = ANY(%s) AND status = 'Running'", (done,))
        cur.execute("UPDATE core_job SET phase = 'Completed', finished = now(), updated = now() "
                    "WHERE id = ANY(%s)", (done,))
        jobs, submitted = [], 0
        while submitted < finished:
            job = make_job(world, world.leaves[int(rng.integers(len(world.leaves)))], running=False)
            jobs.append(job)
            submitted += len(job["tasks"])
        queues = dict(cur.execute("SELECT name, id FROM core_queue").fetchall())
        pcs = dict(cur.execute("SELECT name, id FROM core_priorityclass").fetchall())
        first_job = cur.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM core_job").fetchone()[0]
        first_task = cur.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM core_task").fetchone()[0]
        copy_jobs(cur, jobs, queues, {}, pcs, first_job, first_task)
        for table in ("core_job", "core_task"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                        f"(SELECT MAX(id) FROM {table}) + 1, false)")
    conn.commit()
    return finished, submitted

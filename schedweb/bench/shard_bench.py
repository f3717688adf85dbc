"""Scheduler sharding on PostgreSQL: one leader against two shard instances in two processes.

    python -m schedweb.bench.shard_bench [--size L] [--cycles 10] [--blocks 2] [--mode hard]

Loads `<size>` steady (db_bench's loader, its own database BENCH_DATABASE_URL), then splits the
cluster in two: shard a gets the first half of the nodes (by name) and the jobs of the first
half of the top-level queues (whole subtrees; jobs' `scheduler_name` sched-a), shard b the rest.
Three worker processes keep their snapshots for the whole run: the unsharded leader, and the
instances of shards a and b. Rounds alternate in blocks (leader, then the two shards), each
round: the node agent's work and 1% churn in plain SQL by this driver (new jobs routed by their
queue), outside the timings, then the leader's cycle, or both shards' cycles at once (each told
to start at the same moment). During the leader's blocks no NodeShard row exists (an unsharded
cluster: every job is the leader's), during the shards' blocks both do (mode `--mode`).

Reported, over the measured rounds (each block's first round is a warm-up: an instance's first
full load, or its catch-up with the changes of the other mode's block): cycle wall p50/p99 of the
leader and of each shard, the shards' p99 as a ratio of the leader's (acceptance: <= 0.6), the
cycle CPU p50 (the worker's process time), and placements/s for the cluster (placements over
the rounds' wall time; a shards' round lasts as long as its slower cycle). Table on stdout, JSON
in var/bench/ (`shard-latest.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scheduler_core.bench.report import print_table, write_json
from scheduler_core.bench.session_bench import pct
from schedweb.bench.dbdata import bench_url, churn, start_bound

SHARDS = ("a", "b")
TARGET = 0.6  # issue 32: each shard's cycle p99 at most this share of the single leader's
ROUTE_SQL = ("UPDATE core_job SET scheduler_name = CASE WHEN queue_id = ANY(%s) THEN 'sched-a' "
             "ELSE 'sched-b' END WHERE scheduler_name = 'volcano'")
# The leaves under the first half of the top-level queues (by name): shard a's.
A_QUEUES_SQL = """
WITH RECURSIVE top AS (
  SELECT id, row_number() OVER (ORDER BY name) AS k, count(*) OVER () AS n
  FROM core_queue WHERE parent_id IS NULL),
sub AS (SELECT id FROM top WHERE k <= n / 2
        UNION ALL SELECT q.id FROM core_queue q JOIN sub ON q.parent_id = sub.id)
SELECT id FROM sub"""


def worker_main(shard: str) -> int:
    """A worker process: one cycle of instance `shard` ("" = the leader) per `go` line on
    stdin, a JSON line per cycle on stdout; `quit` ends it."""
    from schedweb.bench.db_bench import setup_django

    setup_django()
    from schedweb.scheduling.cycle import cycle_run

    print(json.dumps({"ready": shard}), flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        t, c = time.perf_counter(), time.process_time()
        run = cycle_run(shard=shard)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        out = {"shard": shard, "wall": wall, "cpu": cpu, "placed": run.binds + run.pipelined,
               "conflicts": run.conflicts, "errors": run.errors, "skipped": run.skipped}
        print(json.dumps(out), flush=True)
    return 0


class Worker:
    """A worker process and its pipes."""

    def __init__(self, shard: str) -> None:
        self.shard = shard
        self.proc = subprocess.Popen([sys.executable, "-m", "schedweb.bench.shard_bench", "--worker", shard],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ)
        self._read()  # ready

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.shard!r} exited ({self.proc.wait()})")
        return json.loads(line)

    def go(self) -> None:
        """Start one cycle."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def done(self) -> dict[str, Any]:
        """Wait for the cycle's figures."""
        out = self._read()
        if out["errors"] or out["skipped"]:
            raise RuntimeError(f"shard {self.shard!r} cycle: {out['errors'] or 'skipped'}")
        return out

    def stop(self) -> None:
        """End the process."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def shards_on(conn: Any, mode: str) -> None:
    """NodeShards a and b over the two halves of the nodes (nothing in use yet)."""
    names = [n for (n,) in conn.execute("SELECT name FROM core_node ORDER BY name").fetchall()]
    half = len(names) // 2
    for shard, nodes in (("a", names[:half]), ("b", names[half:])):
        conn.execute("INSERT INTO core_nodeshard (name, scheduler_name, mode, nodes_desired, "
                     "nodes_in_use, nodes_to_add, nodes_to_remove, min_nodes, cpu_utilization_min, "
                     "cpu_utilization_max, version, created, updated) "
                     "VALUES (%s, %s, %s, %s, '[]', '[]', '[]', 0, 0, 1, 1, now(), now())",
                     (shard, f"sched-{shard}", mode, json.dumps(nodes)))
    conn.commit()


def shards_off(conn: Any) -> None:
    """No NodeShard: the cluster is unsharded (the leader's)."""
    conn.execute("DELETE FROM core_nodeshard")
    conn.commit()


def route(conn: Any, a_queues: list[int]) -> None:
    """New jobs (scheduler volcano) to shard a or b by their queue's subtree."""
    conn.execute(ROUTE_SQL, (a_queues,))
    conn.commit()


def _stats(rounds: list[list[dict[str, Any]]], walls: list[float]) -> dict[str, Any]:
    cycles = [c for r in rounds for c in r]
    placed = sum(c["placed"] for c in cycles)
    return {"cycles": len(cycles), "placed": placed, "conflicts": sum(c["conflicts"] for c in cycles),
            "placements_per_s": round(placed / sum(walls)) if walls and sum(walls) else 0}


def run(size: str, cycles: int, blocks: int, mode: str, rate: float) -> dict[str, Any]:
    """The whole comparison (see the module docstring)."""
    import psycopg

    from schedweb.bench.db_bench import CHURN, case_spec, reset, setup_django

    setup_django()
    rate = rate or CHURN
    world, spec = case_spec(size, "steady", 1)
    with psycopg.connect(bench_url()) as conn:
        shards_off(conn)
        reset(conn, spec)
        a_queues = [q for (q,) in conn.execute(A_QUEUES_SQL).fetchall()]
        conn.execute("UPDATE core_job SET scheduler_name = CASE WHEN queue_id = ANY(%s) THEN 'sched-a' "
                     "ELSE 'sched-b' END", (a_queues,))
        conn.commit()
        workers = {"": Worker(""), **{s: Worker(s) for s in SHARDS}}
        per: dict[str, list[dict[str, Any]]] = {"": [], "a": [], "b": []}
        rounds: dict[str, list[list[dict[str, Any]]]] = {"leader": [], "shards": []}
        walls: dict[str, list[float]] = {"leader": [], "shards": []}
        try:
            for block in range(blocks):
                for kind, names in (("leader", [""]), ("shards", list(SHARDS))):
                    (shards_on(conn, mode) if kind == "shards" else shards_off(conn))
                    for i in range(cycles + 1):
                        start_bound(conn)
                        churn(conn, world, rate)
                        route(conn, a_queues)
                        t = time.perf_counter()
                        for name in names:  # both shards start together
                            workers[name].go()
                        out = [workers[name].done() for name in names]
                        wall = time.perf_counter() - t
                        if i == 0:  # warm-up: the first (full) load, or the catch-up after
                            continue  # the other mode's block (its changes applied at once)
                        rounds[kind].append(out)
                        walls[kind].append(wall)
                        for o in out:
                            per[o["shard"]].append(o)
                    print(f"block {block + 1}/{blocks} {kind}: done", file=sys.stderr, flush=True)
        finally:
            for w in workers.values():
                w.stop()
            shards_off(conn)
        tasks = conn.execute("SELECT count(*) FROM core_task").fetchone()[0]
    leader_p99 = pct([o["wall"] for o in per[""]], 99)
    rows = []
    for name, label in (("", "leader"), ("a", "shard a"), ("b", "shard b")):
        ws = [o["wall"] for o in per[name]]
        rows.append({"instance": label, "cycles": len(ws), "cycle_ms_p50": round(pct(ws, 50) * 1e3, 1),
                     "cycle_ms_p99": round(pct(ws, 99) * 1e3, 1),
                     "cpu_ms_p50": round(pct([o["cpu"] for o in per[name]], 50) * 1e3, 1),
                     "p99_vs_leader": round(pct(ws, 99) / leader_p99, 2) if leader_p99 else None,
                     "placed": sum(o["placed"] for o in per[name]),
                     "conflicts": sum(o["conflicts"] for o in per[name])})
    return {"size": size, "scenario": "steady", "mode": mode, "tasks": tasks, "churn": rate, "blocks": blocks,
            "cycles_per_block": cycles, "instances": rows,
            "cluster": {k: _stats(rounds[k], walls[k]) for k in rounds},
            "acceptance": {"target": TARGET, "ok": all(r["p99_vs_leader"] is not None
                                                        and r["p99_vs_leader"] <= TARGET for r in rows[1:])}}


COLUMNS = [("instance", "instance"), ("cycles", "cycles"), ("cycle p50 ms", "cycle_ms_p50"),
           ("cycle p99 ms", "cycle_ms_p99"), ("CPU p50 ms", "cpu_ms_p50"), ("p99 / leader", "p99_vs_leader"),
           ("placed", "placed"), ("lost races", "conflicts")]


def main(argv: list[str] | None = None) -> int:
    """Run the comparison, print the table, write the JSON; exit 1 if the acceptance fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="L")
    parser.add_argument("--cycles", type=int, default=10, help="measured rounds per mode and block")
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--mode", default="hard", choices=["hard", "soft"])
    parser.add_argument("--churn", type=float, default=0.0, help="share of running tasks per round")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker_main(args.worker)
    out = run(args.size, args.cycles, args.blocks, args.mode, args.churn)
    cluster = out["cluster"]
    title = (f"Scheduler sharding, {args.size} steady ({out['tasks']} tasks), {args.mode} mode: "
             f"placements/s leader {cluster['leader']['placements_per_s']}, "
             f"two shards {cluster['shards']['placements_per_s']}")
    table = print_table(title, COLUMNS, out["instances"])
    write_json(Path("var/bench"), "shard", out, table)
    verdict = "ok" if out["acceptance"]["ok"] else "FAILED"
    print(f"acceptance (each shard's p99 <= {TARGET} x the leader's): {verdict}")
    return 0 if out["acceptance"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

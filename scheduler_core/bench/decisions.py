"""Digests of what the scheduler decided on the benchmark clusters: a speed change must keep them.

    python -m scheduler_core.bench.decisions                 # S and M, every scenario
    python -m scheduler_core.bench.decisions M:fill S:steady

For each case, the same cycles as session_bench (steady: churn between cycles; backlog: the
same state again) and one digest of every cycle's SessionResult (binds, pipelines, evictions,
phases, queue figures, reasons, warnings; not the timings). Run it before and after a change
meant only to make scheduling faster: the lines must be identical.
"""

from __future__ import annotations

import hashlib
import json
import sys

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.framework.conf import parse_conf
from scheduler_core.framework.node_search import NodeScan
from scheduler_core.scheduler import run_session

# (size, scenario, cycles): enough cycles for churn and a second look at the same backlog.
# A `/capacity` case runs with the hierarchical capacity plugin in proportion's place (schedweb's
# default configuration): its quota refusals and queue chains are digested too.
CASES = (("S", "fill", 1), ("S", "steady", 4), ("S", "contention", 1), ("S", "backlog", 3),
         ("M", "fill", 1), ("M", "steady", 2), ("M", "contention", 1), ("M", "backlog", 2),
         ("S", "steady/capacity", 4), ("M", "steady/capacity", 2))
CAPACITY_CONF = {"actions": "enqueue, allocate, backfill", "tiers": [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
    {"plugins": [{"name": "overcommit"}, {"name": "drf"}, {"name": "predicates"},
                 {"name": "capacity", "enableHierarchy": True}, {"name": "nodeorder"}, {"name": "binpack"}]}]}


def digest(size: str, scenario: str, cycles: int, seed: int = 1) -> str:
    """Hex digest of the results of `cycles` sessions of the case (deterministic)."""
    scenario, _, variant = scenario.partition("/")
    world = build_world(size, scenario, seed)
    conf = parse_conf(CAPACITY_CONF) if variant == "capacity" else conf_of(world.spec)
    churn = Churn(world) if scenario in ("steady", "backlog") else None
    h = hashlib.sha256()
    scan = NodeScan()  # the feasible-node search's rotating index, kept across cycles like the cycle's
    for cycle in range(cycles):
        if churn is not None and scenario == "steady" and cycle > 0:
            churn.step()
        result = run_session(to_snapshot(world.spec), conf, node_scan=scan)
        data = result.to_json()
        data.pop("timing", None)
        data.pop("conditions", None)  # derived from the phases and gang counts already digested
        if not data.get("job_errors"):  # added later: an empty one keeps older digests comparable
            data.pop("job_errors", None)
        h.update(json.dumps(data, sort_keys=True, default=str).encode())
        if churn is not None:
            churn.apply(result)
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    """Print `SIZE:SCENARIO digest` for the named cases (default all of CASES)."""
    wanted = set(sys.argv[1:] if argv is None else argv)
    unknown = wanted - {f"{s}:{c}" for s, c, _ in CASES}
    if unknown:
        print(f"unknown case(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for size, scenario, cycles in CASES:
        if not wanted or f"{size}:{scenario}" in wanted:
            print(f"{size}:{scenario} {digest(size, scenario, cycles)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A generated cluster kept as one snapshot across cycles, the way schedweb's incremental load
keeps its own: the session's decisions and the churn are applied to the same objects.

    python -m scheduler_core.bench.kept_cluster [--case M:steady] [--cycles 10]

Two copies of the case's cluster run in lockstep, one with the plugins' kept state
(`run_session(kept=None)`, framework.kept) and one building everything at every open
(`kept=False`); which one runs first alternates. Each cycle's results must be identical (exit 1
otherwise); printed: session wall and CPU ms of both (p50, range), their ratio, and the open
phase (plugin open timings summed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.framework.conf import SchedulerConf, parse_conf
from scheduler_core.framework.kept import kept_state
from scheduler_core.framework.node_search import NodeScan
from scheduler_core.model import OCCUPYING_STATUSES, ClusterSnapshot, TaskStatus
from scheduler_core.result import SessionResult
from scheduler_core.scheduler import run_session

_MOVED = (TaskStatus.BINDING, TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED)


def settle(snap: ClusterSnapshot) -> None:
    """What the next load would see after a session: bound tasks Running, evicted, pipelined
    and unbound allocated tasks Pending without a node; job phases as the session left them."""
    for job in snap.jobs.values():
        for status in _MOVED:
            for task in list(job.task_status_index.get(status, {}).values()):
                node = snap.nodes[task.node_name]
                node.remove_task(task)
                if status is TaskStatus.BINDING:
                    job.update_task_status(task, TaskStatus.RUNNING)
                    node.add_task(task)
                else:
                    job.update_task_status(task, TaskStatus.PENDING)
                    task.node_name = None
    snap.set_aside = {}


class KeptCluster:
    """One generated world: its spec (the churn's) and a snapshot kept in step with it."""

    def __init__(self, size: str, scenario: str, seed: int, conf: SchedulerConf | None = None) -> None:
        self.world = build_world(size, scenario, seed)
        self.conf = conf or conf_of(self.world.spec)
        self.churn = Churn(self.world)
        self.snap = to_snapshot(self.world.spec)
        self.scan = NodeScan()

    def cycle(self, kept: bool) -> tuple[SessionResult, float, float]:
        """One session on the kept snapshot, then its decisions applied; (result, wall s, CPU s)."""
        if kept:  # kept as the incremental load keeps its snapshot: answers from the first session
            kept_state(self.snap).lasting = True
        t0, c0 = time.perf_counter(), time.process_time()
        result = run_session(self.snap, self.conf, node_scan=self.scan, kept=None if kept else False)
        t1, c1 = time.perf_counter(), time.process_time()
        self.churn.apply(result)
        settle(self.snap)
        return result, t1 - t0, c1 - c0

    def step(self) -> None:
        """Churn the spec (finish, submit) and apply the same change to the kept snapshot."""
        self.churn.step()
        snap, spec = self.snap, self.world.spec
        for uid in [u for u in snap.jobs if u not in self.churn.jobs]:
            job = snap.jobs.pop(uid)
            for task in job.tasks.values():
                if task.node_name is not None and (task.status in OCCUPYING_STATUSES
                                                   or task.status is TaskStatus.PIPELINED):
                    snap.nodes[task.node_name].remove_task(task)
        new = [j for j in spec["jobs"] if f"{j['namespace']}/{j['name']}" not in snap.jobs]
        if new:
            part = to_snapshot({**spec, "nodes": [], "queues": [], "jobs": new})
            for uid, job in part.jobs.items():
                snap.jobs[uid] = job
        snap.now = spec.get("now", snap.now)


def _digest(result: SessionResult) -> str:
    data = result.to_json()
    data.pop("timing", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _open_s(result: SessionResult) -> float:
    return sum(v for k, v in result.timing.items() if k.startswith("plugin_") and k.endswith("_open_s"))


def compare(size: str, scenario: str, cycles: int, seed: int = 1,
            conf: SchedulerConf | None = None) -> dict[str, Any]:
    """Run the two copies in lockstep; figures per side, and whether every cycle matched."""
    sides = {name: KeptCluster(size, scenario, seed, conf) for name in ("kept", "fresh")}
    figures: dict[str, dict[str, list[float]]] = {n: {"wall": [], "cpu": [], "open": []} for n in sides}
    same = True
    for k in range(cycles + 1):
        order = ["kept", "fresh"] if k % 2 else ["fresh", "kept"]
        digests = {}
        for name in order:
            cluster = sides[name]
            if k > 0 and scenario == "steady":
                cluster.step()
            result, wall, cpu = cluster.cycle(kept=name == "kept")
            digests[name] = _digest(result)
            if k > 0:  # cycle 0 is the warm-up (both build from scratch)
                figures[name]["wall"].append(wall * 1e3)
                figures[name]["cpu"].append(cpu * 1e3)
                figures[name]["open"].append(_open_s(result) * 1e3)
        same = same and digests["kept"] == digests["fresh"]
    return {"size": size, "scenario": scenario, "cycles": cycles, "same_decisions": same, "figures": figures}


def profile(size: str, scenario: str, warm: int, seed: int = 1, conf: SchedulerConf | None = None) -> str:
    """pyinstrument's tree of one session on the kept snapshot after `warm` kept cycles."""
    from scheduler_core.bench.session_bench import sample_profile

    cluster = KeptCluster(size, scenario, seed, conf)
    for _ in range(warm + 1):
        cluster.cycle(kept=True)
        if scenario == "steady":
            cluster.step()
    return sample_profile(lambda: cluster.cycle(kept=True))


def _summary(values: list[float]) -> str:
    ordered = sorted(values)
    return f"p50 {ordered[len(ordered) // 2]:.1f} ({ordered[0]:.1f}-{ordered[-1]:.1f})"


def main(argv: list[str] | None = None) -> int:
    """Command line: print both sides' figures; exit 1 when a cycle's decisions differ."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", default="M:steady")
    p.add_argument("--cycles", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--conf", metavar="FILE", help="scheduler configuration YAML (default: the case's)")
    p.add_argument("--profile", action="store_true",
                   help="pyinstrument tree of one kept cycle after --cycles warm ones instead")
    args = p.parse_args(argv)
    size, _, scenario = args.case.partition(":")
    conf = parse_conf(Path(args.conf).read_text()) if args.conf else None
    if args.profile:
        print(profile(size, scenario, args.cycles, args.seed, conf))
        return 0
    out = compare(size, scenario, args.cycles, args.seed, conf)
    for name, fig in out["figures"].items():
        print(f"{args.case} {name:5}: session wall {_summary(fig['wall'])} ms, "
              f"CPU {_summary(fig['cpu'])} ms, plugin open {_summary(fig['open'])} ms")
    kept, fresh = out["figures"]["kept"]["cpu"], out["figures"]["fresh"]["cpu"]
    ratios = sorted(a / b for a, b in zip(kept, fresh, strict=True) if b)
    if ratios:
        print(f"kept / fresh session CPU per cycle: {ratios[len(ratios) // 2]:.2f} "
              f"({ratios[0]:.2f}-{ratios[-1]:.2f})")
    print("decisions identical" if out["same_decisions"] else "DECISIONS DIFFER")
    return 0 if out["same_decisions"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""The affinity-heavy gang: one job whose tasks carry many preferred pod (anti-)affinity terms.

    python -m scheduler_core.bench.affinity_shape [--size S] [--replicas 400] [--min-member 400]
        [--terms 50] [--values 20] [--cycles 3] [--budget UNITS]

A generated cluster (`generator`, scenario steady: running jobs hold most of the nodes) plus a
queue `attack` whose capability holds the gang, and in it one admitted gang whose every
task has `terms` preferred `podAffinity` and `terms` preferred `podAntiAffinity` terms, each a
`matchExpressions` `In` over `values` label values (half of them name running jobs, so the
terms match real pods), over the hostname, zone and rack topology keys. The gang never fits the
room left, so every cycle evaluates it again and discards what it placed: the shape of the probe's
finding (400 tasks, 50 + 50 terms of 20 values). Prints, per cycle, the session's wall time, the
work units the cycle counted (`framework.work_budget`) and the gang's reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from scheduler_core.bench.generator import EPOCH, GI, build_world
from scheduler_core.bench.snapshot import conf_of, to_snapshot
from scheduler_core.scheduler import run_session

HOSTNAME = "kubernetes.io/hostname"
KEYS = (HOSTNAME, "zone", "rack")
ATTACK_QUEUE = "attack"
ATTACK_JOB = "affinity-gang"
ATTACK_NAMESPACE = "ns-attack"


def preferred_terms(count: int, values: int, job_names: list[str], offset: int = 0) -> list[dict[str, Any]]:
    """`count` weighted terms, each `In` over `values` values; even terms select running jobs by
    their `job` label, odd ones the gang's own `app` label (its tasks carry app=a0)."""
    terms = []
    for k in range(count):
        i = k + offset
        if k % 2 == 0 and job_names:
            key, vals = "job", [job_names[(i * values + v) % len(job_names)] for v in range(values)]
        else:
            key, vals = "app", [f"a{(i * values + v) % (4 * values)}" for v in range(values)]
        terms.append({"weight": 1 + i % 100, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": vals}]},
            "topologyKey": KEYS[i % len(KEYS)]}})
    return terms


def gang_affinity(terms: int, values: int, job_names: list[str]) -> dict[str, Any]:
    """The affinity object every task of the gang shares (as loaders share decoded specs)."""
    return {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                        preferred_terms(terms, values, job_names)},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                            preferred_terms(terms, values, job_names, offset=terms)},
    }


def build(size: str = "S", replicas: int = 400, min_member: int | None = None, terms: int = 50,
          values: int = 20, seed: int = 1) -> dict[str, Any]:
    """The scenario dict: a steady generated cluster, hostname labels, the attack queue and gang."""
    w = build_world(size, "steady", seed)
    spec = w.spec
    for node in spec["nodes"]:
        node["labels"][HOSTNAME] = node["name"]
    job_names = [j["name"] for j in spec["jobs"] if j.get("phase") == "Running"]
    spec["queues"].append({"name": ATTACK_QUEUE, "parent": "root", "weight": 1,
                           "capability": {"cpu": replicas, "memory": replicas * 2 * GI}})
    request = {"cpu": 1.0, "memory": 2 * GI}
    affinity = gang_affinity(terms, values, job_names)
    labels = {"app": "a0", "job": ATTACK_JOB}
    tasks = [{"name": f"{ATTACK_JOB}-{k}", "role": "worker", "request": request, "labels": labels,
              "affinity": affinity} for k in range(replicas)]
    spec["jobs"].append({"name": ATTACK_JOB, "namespace": ATTACK_NAMESPACE, "queue": ATTACK_QUEUE,
                         "min_member": replicas if min_member is None else min_member,
                         "min_resources": {}, "priority_class": "normal", "phase": "Inqueue",
                         "created": EPOCH, "tasks": tasks})
    return spec


def run(spec: dict[str, Any], cycles: int = 1, budget: int | None = None) -> list[dict[str, Any]]:
    """`cycles` sessions, each on a fresh snapshot of `spec` (the gang keeps waiting)."""
    conf = conf_of(spec)
    uid = f"{ATTACK_NAMESPACE}/{ATTACK_JOB}"
    out = []
    for _ in range(cycles):
        snap = to_snapshot(spec)
        started = time.perf_counter()
        kwargs = {} if budget is None else {"work_budget": budget}
        result = run_session(snap, conf, **kwargs)
        wall = time.perf_counter() - started
        reason = result.reasons.get(uid)
        out.append({"session_s": round(wall, 3), "work": result.work,
                    "reason": (reason.code, reason.message[:100]) if reason else None,
                    "binds": len(result.binds)})
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: build the shape, run cycles, print one line per cycle."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="S")
    p.add_argument("--replicas", type=int, default=400)
    p.add_argument("--min-member", type=int, default=None)
    p.add_argument("--terms", type=int, default=50)
    p.add_argument("--values", type=int, default=20)
    p.add_argument("--cycles", type=int, default=3)
    p.add_argument("--budget", type=int, default=None, help="work units per job per cycle")
    a = p.parse_args(argv)
    spec = build(a.size, a.replicas, a.min_member, a.terms, a.values)
    for k, row in enumerate(run(spec, a.cycles, a.budget)):
        print(f"cycle {k + 1}: {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seeded synthetic clusters for the benchmarks: sizes S / M / L, four scenarios and their variants.

A cluster is produced as a scenario-format dict (docs: scenario-format.md; quantities are plain
numbers: cpu in cores, memory in bytes, GPUs in units) and turned into a `ClusterSnapshot` by
`scheduler_core.bench.snapshot.to_snapshot`. Same (size, scenario, seed) -> same cluster, byte
for byte. Queue counts include the (listed) root queue: S = 1+3+9, M = 1+5+25+100,
L = 1+10+100+1000.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

GI = 1024 ** 3
GPU = "nvidia.com/gpu"
EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z
GANG_SIZES = (1, 4, 16, 64)
GANG_P = (0.6, 0.25, 0.1, 0.05)
CPU_CHOICES = (1, 2, 4, 8)  # cores per task; mean ~2.8 so 'running' fills ~88% of the cpu
CPU_P = (0.35, 0.3, 0.23, 0.12)
PRIORITY_CLASSES = {"critical": 1000, "high": 500, "normal": 100, "low": 10, "batch": 0}
PRIORITY_P = (0.05, 0.15, 0.5, 0.2, 0.1)
ZONES = ("a", "b", "c")
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
SCENARIOS = ("fill", "steady", "contention", "backlog")
CONTENTION_ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"
# Variants: a base scenario's cluster (the same jobs, byte for byte) under another scheduler
# configuration. "fill-binpack": nodeorder off, binpack weight 10, so a gang's identical tasks
# pile onto one node until it is full (allocate's runs are long), where the default scores
# spread them (leastrequested).
VARIANTS = {"fill-binpack": "fill"}


@dataclass(frozen=True)
class Size:
    """Shape of one benchmark cluster."""

    name: str
    nodes: int
    node_cpu: int
    branching: tuple[int, ...]  # children per level below root
    pending: int  # approximate pending task count
    running: int  # approximate running task count

    @property
    def queue_count(self) -> int:
        """Queues including root."""
        total, level = 1, 1
        for b in self.branching:
            level *= b
            total += level
        return total


SIZES = {
    "S": Size("S", 100, 32, (3, 3), 1_500, 1_000),
    "M": Size("M", 1_000, 64, (5, 5, 4), 10_000, 20_000),
    "L": Size("L", 5_000, 64, (10, 10, 10), 50_000, 100_000),
}


@dataclass
class World:
    """A generated cluster being built: the scenario dict plus placement bookkeeping."""

    size: Size
    scenario: str
    rng: np.random.Generator
    spec: dict[str, Any] = field(default_factory=dict)
    leaves: list[str] = field(default_factory=list)
    free: np.ndarray | None = None  # (n, 3): cpu cores, memory bytes, gpus left per node
    groups: dict[str, list[int]] = field(default_factory=dict)  # placement class -> node rows
    cursors: dict[str, int] = field(default_factory=dict)
    seq: int = 0  # next job number

    def next_job_name(self) -> str:
        """Unique, sortable job names."""
        self.seq += 1
        return f"j{self.seq:07d}"


def make_nodes(w: World) -> None:
    """Nodes: ~15% GPU (tainted), ~3% dedicated (tainted), ~1% unschedulable, zones a/b/c."""
    n, cpu = w.size.nodes, w.size.node_cpu
    nodes: list[dict[str, Any]] = []
    w.free = np.zeros((n, 3))
    w.groups = {"plain": [], "gpu": [], **{f"zone-{z}": [] for z in ZONES}}
    for i in range(n):
        zone = ZONES[i % 3]
        labels = {"zone": zone, "rack": f"r{i // 20:03d}"}
        alloc: dict[str, float] = {"cpu": cpu, "memory": cpu * 8 * GI, "pods": 110}
        taints: list[dict[str, str]] = []
        kind = i % 100
        if kind % 20 in (3, 9, 15):  # 15% of the nodes
            alloc[GPU] = 8
            labels["accelerator"] = "nvidia"
            taints.append(dict(GPU_TAINT))
            w.groups["gpu"].append(i)
        elif kind in (7, 41, 77):  # 3%: nobody tolerates them
            taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
        node: dict[str, Any] = {"name": f"n{i:05d}", "allocatable": alloc, "labels": labels}
        if taints:
            node["taints"] = taints
        if kind == 53:
            node["unschedulable"] = True
        elif not taints:
            w.groups["plain"].append(i)
            w.groups[f"zone-{zone}"].append(i)
        w.free[i] = (cpu, cpu * 8 * GI, alloc.get(GPU, 0))
        nodes.append(node)
    for name, rows in w.groups.items():
        order = w.rng.permutation(len(rows))
        w.groups[name] = [rows[k] for k in order]  # random next-fit order, stable per seed
        w.cursors[name] = 0
    w.spec["nodes"] = nodes


def make_queues(w: World) -> None:
    """A queue tree below root; weights 1..4; every tenth leaf has a capability."""
    queues: list[dict[str, Any]] = [{"name": "root"}]
    level = ["root"]
    for depth, b in enumerate(w.size.branching):
        nxt: list[str] = []
        for parent in level:
            for k in range(b):
                name = f"q{k}" if parent == "root" else f"{parent}-{k}"
                q: dict[str, Any] = {"name": name, "parent": parent, "weight": int(w.rng.integers(1, 5))}
                last = depth == len(w.size.branching) - 1
                if last and len(w.leaves) % 10 == 9:
                    share = w.size.nodes * w.size.node_cpu // max(1, len(level) * b)
                    q["capability"] = {"cpu": 2 * share, "memory": 16 * share * GI}
                queues.append(q)
                nxt.append(name)
                if last:
                    w.leaves.append(name)
        level = nxt
    w.spec["queues"] = queues


def _job_shape(w: World, unfit: bool) -> tuple[int, dict[str, float], dict[str, Any]]:
    """(gang size, per-task request, placement extras) of one job."""
    rng = w.rng
    gang = int(rng.choice(GANG_SIZES, p=GANG_P))
    cpu = float(rng.choice(CPU_CHOICES, p=CPU_P))
    request: dict[str, float] = {"cpu": cpu, "memory": cpu * int(rng.choice((2, 4, 6))) * GI}
    extras: dict[str, Any] = {"group": "plain"}
    r = rng.random()
    if unfit:
        if r < 0.5:  # more cpu than any node has
            request = {"cpu": w.size.node_cpu * 2, "memory": 4 * GI}
        else:
            extras = {"group": None, "node_selector": {"zone": "nowhere"}}
    elif r < 0.10:
        request = {"cpu": 4.0, "memory": 32 * GI, GPU: 1}
        extras = {"group": "gpu", "node_selector": {"accelerator": "nvidia"},
                  "tolerations": [dict(GPU_TOLERATION)]}
    elif r < 0.30:
        zone = ZONES[int(rng.integers(3))]
        extras = {"group": f"zone-{zone}", "node_selector": {"zone": zone}}
    return gang, request, extras


def make_job(w: World, queue: str, running: bool, unfit: bool = False,
             priority: str | None = None, elastic: bool | None = None) -> dict[str, Any]:
    """One job (a gang of identical tasks); running jobs get nodes by next-fit, else {}.

    Elastic jobs (30% unless `elastic` says) need only half their tasks (min_member): only
    those can lose tasks to preempt / reclaim under gang.
    """
    gang, request, extras = _job_shape(w, unfit)
    if elastic is None:
        elastic = w.rng.random() < 0.3
    min_member = max(1, gang // 2) if elastic else gang
    name = w.next_job_name()
    ns = "ns-" + queue.split("-")[0]
    pc = priority or str(w.rng.choice(list(PRIORITY_CLASSES), p=PRIORITY_P))
    tasks = []
    for k in range(gang):
        t: dict[str, Any] = {"name": f"{name}-{k}", "role": "worker", "request": request,
                             "labels": {"job": name}}
        if "node_selector" in extras:
            t["node_selector"] = extras["node_selector"]
        if "tolerations" in extras:
            t["tolerations"] = extras["tolerations"]
        tasks.append(t)
    min_res = {k: v * min_member for k, v in request.items()}
    job: dict[str, Any] = {"name": name, "namespace": ns, "queue": queue, "min_member": min_member,
                           "min_resources": min_res, "priority_class": pc,
                           "created": EPOCH + w.seq, "tasks": tasks}
    if running:
        rows = _place(w, extras["group"], request, gang)
        if rows is None:
            return {}
        for t, row in zip(tasks, rows, strict=True):
            t["status"], t["node"] = "Running", f"n{row:05d}"
        job["phase"] = "Running"
    return job


def _place(w: World, group: str | None, request: dict[str, float], count: int) -> list[int] | None:
    """Next-fit placement of `count` tasks in a node group; None (nothing changed) if no room."""
    if group is None:
        return None
    assert w.free is not None
    rows = w.groups[group]
    need = np.array([request["cpu"], request["memory"], request.get(GPU, 0)])
    chosen: list[int] = []
    cur = w.cursors[group]
    tried = 0
    while len(chosen) < count and tried < len(rows):
        r = rows[cur % len(rows)]
        if (w.free[r] >= need).all():
            w.free[r] -= need
            chosen.append(r)
            tried = 0
        else:
            cur += 1
            tried += 1
    if len(chosen) < count:
        for r in chosen:
            w.free[r] += need
        return None
    w.cursors[group] = cur
    return chosen


def generate(size: str | Size, scenario: str = "fill", seed: int = 1) -> dict[str, Any]:
    """A scenario-format dict: nodes, queues, priority classes, jobs (running and pending)."""
    return build_world(size, scenario, seed).spec


def build_world(size: str | Size, scenario: str = "fill", seed: int = 1) -> World:
    """The generated cluster with its generator state (Churn keeps submitting from it)."""
    sz = SIZES[size] if isinstance(size, str) else size
    variant, scenario = scenario, VARIANTS.get(scenario, scenario)
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {variant!r}; expected one of {SCENARIOS + tuple(VARIANTS)}")
    w = World(sz, scenario, np.random.default_rng(seed))
    make_nodes(w)
    make_queues(w)
    w.spec["priority_classes"] = dict(PRIORITY_CLASSES)
    if scenario == "contention":
        w.spec["config"] = {"actions": CONTENTION_ACTIONS, "tiers": default_tiers()}
    jobs: list[dict[str, Any]] = []
    if scenario != "fill":
        jobs += running_jobs(w, contention=scenario == "contention")
    jobs += pending_jobs(w, sz.pending, unfit_share=0.3 if scenario == "backlog" else 0.0,
                         contention=scenario == "contention")
    w.spec["jobs"] = jobs
    w.spec["now"] = EPOCH + w.seq + 3600
    if variant == "fill-binpack":
        w.spec["config"] = {"actions": "enqueue, allocate, backfill", "tiers": binpack_tiers()}
    return w


def running_jobs(w: World, contention: bool = False) -> list[dict[str, Any]]:
    """Running jobs up to ~`size.running` tasks (contention: a third of the leaves hold it all)."""
    leaves = w.leaves[: max(1, len(w.leaves) // 3)] if contention else w.leaves
    jobs, tasks, misses = [], 0, 0
    target = w.size.running
    while tasks < target and misses < 200:
        queue = leaves[int(w.rng.integers(len(leaves)))]
        prio = str(w.rng.choice(["low", "batch"])) if contention else None
        job = make_job(w, queue, running=True, priority=prio, elastic=True if contention else None)
        if not job:
            misses += 1  # its node group is full (GPU nodes first); others may still have room
            continue
        misses = 0
        jobs.append(job)
        tasks += len(job["tasks"])
    return jobs


def pending_jobs(w: World, count: int, unfit_share: float = 0.0, contention: bool = False,
                 ) -> list[dict[str, Any]]:
    """Pending jobs up to ~`count` tasks; `unfit_share` of the jobs can never be placed."""
    # Contention: the work arrives in the starved two thirds of the leaves, at high priority,
    # plus some in the busy third at top priority (preempt inside a queue).
    leaves = w.leaves[len(w.leaves) // 3:] if contention and len(w.leaves) > 2 else w.leaves
    jobs, tasks = [], 0
    while tasks < count:
        if contention and w.rng.random() < 0.2:
            queue = w.leaves[int(w.rng.integers(max(1, len(w.leaves) // 3)))]
            prio: str | None = "critical"
        else:
            queue = leaves[int(w.rng.integers(len(leaves)))]
            prio = "high" if contention else None
        job = make_job(w, queue, running=False, unfit=w.rng.random() < unfit_share, priority=prio)
        if contention:
            job["phase"] = "Inqueue"  # admitted earlier: reclaim and preempt skip Pending jobs
        jobs.append(job)
        tasks += len(job["tasks"])
    return jobs


def binpack_tiers() -> list[dict[str, Any]]:
    """Volcano's default tiers without nodeorder, binpack weighted 10 (the fill-binpack variant)."""
    tiers = default_tiers()
    tiers[1]["plugins"] = [{"name": "binpack", "arguments": {"binpack.weight": 10}} if p["name"] == "binpack"
                           else p for p in tiers[1]["plugins"] if p["name"] != "nodeorder"]
    return tiers


def default_tiers() -> list[dict[str, Any]]:
    """Volcano's default tiers (the same plugins as DEFAULT_CONF)."""
    return [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {"plugins": [{"name": p} for p in
                         ("overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack")]}]

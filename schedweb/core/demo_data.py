"""The demo cluster as data: queues, nodes, priority classes, quotas and jobs (see demo.py)."""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
HIGHMEM_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "highmem", "effect": "NoSchedule"}

PRIORITY_CLASSES: list[dict[str, Any]] = [
    {"name": "high-priority", "value": 1000, "description": "Production and deadline work."},
    {"name": "normal", "value": 100, "description": "Default for research jobs."},
    {"name": "low-priority", "value": 10, "preemption_policy": "Never",
     "description": "Scavenger work; never preempts."},
]

# Parents before children. Three levels under the implicit root; weights, deserved, guarantee
# and capability are mixed on purpose. The default configuration is hierarchical capacity
# (schedweb.scheduling.default_conf), which needs deserved at every level: each queue's deserved
# carries its intended share (weights 3:5:1:1 at the top, 2:1 and 3:1 below, within the parents'
# capabilities), children's deserved sum within their parent's, guarantees within deserved. A
# parent's capability bounds its whole subtree (research: 200 cpu, 40 GPUs; dev: 32 cpu), so no
# child repeats it. Weights still decide the shares under Volcano's flat proportion.
QUEUES: list[dict[str, Any]] = [
    {"name": "research", "weight": 3, "capability": {"cpu": "200", "memory": "1600Gi", GPU: 40},
     "deserved": {"cpu": "192", "memory": "1536Gi", GPU: 40}},
    {"name": "nlp", "parent": "research", "weight": 2,
     "deserved": {"cpu": "128", "memory": "1024Gi", GPU: 24}, "guarantee": {"cpu": "16", "memory": "64Gi"}},
    {"name": "nlp-train", "parent": "nlp", "weight": 3,
     "deserved": {"cpu": "96", "memory": "768Gi", GPU: 24}},
    {"name": "nlp-eval", "parent": "nlp", "weight": 1, "capability": {"cpu": "48", "memory": "192Gi"},
     "deserved": {"cpu": "32", "memory": "128Gi"}},
    {"name": "vision", "parent": "research", "weight": 1, "capability": {"cpu": "96", GPU: 16},
     "deserved": {"cpu": "64", "memory": "512Gi", GPU: 16}},
    {"name": "production", "weight": 5, "priority": 10, "reclaimable": False,
     "deserved": {"cpu": "512", "memory": "4096Gi"}, "guarantee": {"cpu": "64", "memory": "256Gi"}},
    {"name": "serving-batch", "parent": "production", "weight": 2,
     "deserved": {"cpu": "320", "memory": "1536Gi"}},
    {"name": "etl", "parent": "production", "weight": 1, "capability": {"cpu": "120", "memory": "2000Gi"},
     "deserved": {"cpu": "120", "memory": "2000Gi"}},
    {"name": "dev", "weight": 1, "capability": {"cpu": "32", "memory": "128Gi"},
     "deserved": {"cpu": "32", "memory": "128Gi"}},
    {"name": "sandbox", "parent": "dev", "weight": 1, "deserved": {"cpu": "32", "memory": "128Gi"}},
    {"name": "legacy", "weight": 1, "deserved": {"cpu": "16", "memory": "64Gi"}},
]
CLOSED_QUEUES = ["legacy"]  # closed after its (finished) job is loaded
# The default queue (DEFAULT_QUEUE, created by core's migrations) gets this deserved when unset.
DEFAULT_QUEUE_DESERVED = {"cpu": "16", "memory": "64Gi"}


def _nodes() -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for i in range(1, 13):
        nodes.append({"name": f"cpu-{i:02d}", "allocatable": {"cpu": "32", "memory": "128Gi", "pods": 110},
                      "labels": {"pool": "general", "zone": "zone-a" if i % 2 else "zone-b"},
                      "unschedulable": i == 12})  # cpu-12 is cordoned for maintenance
    for i in range(1, 7):
        nodes.append({"name": f"gpu-{i:02d}",
                      "allocatable": {"cpu": "64", "memory": "512Gi", GPU: 8, "pods": 110},
                      "labels": {"pool": "gpu", "accelerator": "nvidia-a100", "zone": "zone-a"},
                      "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]})
    for i in range(1, 4):
        nodes.append({"name": f"highmem-{i:02d}",
                      "allocatable": {"cpu": "96", "memory": "1536Gi", "pods": 64},
                      "labels": {"pool": "highmem", "zone": "zone-b"},
                      "taints": [{"key": "dedicated", "value": "highmem", "effect": "NoSchedule"}]})
    return nodes


NODES = _nodes()
NAMESPACE_QUOTAS = [{"namespace": "dev", "hard": {"cpu": "40", "memory": "160Gi"}}]


def _job(namespace: str, name: str, queue: str, phase: str, n: int, cpu: str, memory: str, *,
         gpu: int = 0, min_member: int | None = None, pool: str = "general", **extra: Any) -> dict[str, Any]:
    """A job spec: `n` identical tasks; `pool` picks selector/tolerations and where Running tasks go."""
    request: dict[str, Any] = {"cpu": cpu, "memory": memory} if cpu else {}
    if gpu:
        request[GPU] = gpu
    task: dict[str, Any] = {"request": request, "node_selector": {"pool": pool} if pool != "general" else {}}
    if pool == "gpu":
        task["tolerations"] = [GPU_TOLERATION]
    elif pool == "highmem":
        task["tolerations"] = [HIGHMEM_TOLERATION]
    return {"namespace": namespace, "name": name, "queue": queue, "phase": phase, "tasks": n,
            "task": task, "min_member": n if min_member is None else min_member, "pool": pool, **extra}


# `duration` (seconds) is how long each task runs under the simulated agent (demo.py varies it a
# little per task): some of the running work ends within the first minute of `make run`, the rest
# over minutes, so the history charts move and waiting jobs get their turn.
JOBS: list[dict[str, Any]] = [
    # Running: tasks placed on nodes.
    _job("nlp", "bert-pretrain", "nlp-train", "Running", 4, "8", "64Gi", gpu=4, pool="gpu",
         priority_class="high-priority", duration=1200),
    _job("nlp", "llm-finetune", "nlp-train", "Running", 2, "16", "128Gi", gpu=8, pool="gpu", duration=420),
    _job("nlp", "eval-sweep-1", "nlp-eval", "Running", 3, "4", "16Gi", priority_class="normal", duration=40),
    _job("vision", "resnet-train", "vision", "Running", 2, "8", "32Gi", gpu=2, pool="gpu", duration=360),
    _job("vision", "augment-preproc", "vision", "Running", 6, "2", "8Gi", min_member=1, duration=50),
    _job("prod", "nightly-report", "serving-batch", "Running", 4, "4", "8Gi", priority_class="high-priority",
         duration=90),
    _job("prod", "embedding-refresh", "serving-batch", "Running", 8, "2", "4Gi", min_member=4, duration=180),
    _job("prod", "etl-orders", "etl", "Running", 5, "4", "16Gi", duration=45),
    _job("prod", "etl-clicks", "etl", "Running", 3, "8", "32Gi", duration=240),
    _job("prod", "genomics-assembly", "etl", "Running", 2, "32", "700Gi", pool="highmem", duration=900),
    _job("dev", "notebook-alice", "sandbox", "Running", 1, "2", "8Gi", duration=600),
    _job("dev", "notebook-bob", "sandbox", "Running", 1, "4", "16Gi", duration=1500),
    # Pending or Inqueue: waiting for the scheduler.
    _job("nlp", "tokenize-corpus", "nlp-eval", "Pending", 10, "1", "2Gi", min_member=1, duration=120),
    _job("nlp", "eval-sweep-2", "nlp-eval", "Pending", 3, "4", "16Gi", priority_class="normal", duration=180),
    _job("nlp", "elastic-hpo", "nlp-eval", "Pending", 8, "2", "8Gi", min_member=2, duration=240),
    _job("vision", "detector-train", "vision", "Pending", 2, "8", "32Gi", gpu=4, pool="gpu", duration=600),
    _job("vision", "labeling-export", "vision", "Pending", 1, "1", "1Gi", priority_class="low-priority",
         duration=60),
    _job("prod", "backfill-2024", "etl", "Pending", 20, "2", "8Gi", min_member=5, duration=300),
    _job("prod", "report-weekly", "serving-batch", "Pending", 2, "2", "4Gi", sla_waiting_time=600.0,
         duration=120),
    _job("dev", "ci-smoke", "sandbox", "Pending", 2, "1", "2Gi", duration=60),
    _job("dev", "lint-all", "sandbox", "Pending", 1, "500m", "512Mi", duration=30),
    _job("dev", "best-effort-crawler", "sandbox", "Pending", 2, "", "", duration=300),
    _job("nlp", "eval-sweep-3", "nlp-eval", "Inqueue", 2, "4", "16Gi", duration=120),
    _job("prod", "etl-returns", "etl", "Inqueue", 2, "4", "16Gi", duration=180),
    # Gangs that cannot fit: more GPUs than the cluster has, bigger tasks than any node, more
    # memory than any highmem node, more cpu than the dev queue's capability.
    _job("nlp", "gpt-giant", "nlp-train", "Pending", 20, "16", "256Gi", gpu=8, pool="gpu",
         priority_class="high-priority"),
    _job("vision", "megabatch", "vision", "Pending", 4, "128", "64Gi"),
    _job("prod", "in-memory-join", "etl", "Pending", 2, "64", "2000Gi", pool="highmem"),
    _job("dev", "sandbox-overcap", "sandbox", "Pending", 40, "2", "8Gi"),
    # Finished.
    _job("nlp", "eval-sweep-0", "nlp-eval", "Completed", 3, "4", "16Gi"),
    _job("prod", "etl-orders-yesterday", "etl", "Completed", 5, "4", "16Gi"),
    _job("vision", "resnet-baseline", "vision", "Completed", 2, "8", "32Gi", gpu=2, pool="gpu"),
    _job("dev", "ci-run-41", "sandbox", "Completed", 2, "1", "2Gi"),
    _job("legacy", "old-batch", "legacy", "Completed", 1, "1", "1Gi"),
    _job("dev", "notebook-carol", "sandbox", "Cancelled", 1, "2", "8Gi"),
    _job("nlp", "abandoned-sweep", "nlp-eval", "Cancelled", 4, "2", "4Gi"),
]

# A role-based gang: 1 parameter server and 4 workers, at least ps=1 and worker=2 to start.
TF_JOB: dict[str, Any] = {
    "namespace": "vision", "name": "tf-dist", "queue": "vision", "phase": "Pending", "min_member": 3,
    "min_task_member": {"ps": 1, "worker": 2},
    "duration": 360,
    "tasks": [{"name": "tf-dist-ps-0", "role": "ps", "request": {"cpu": "2", "memory": "8Gi"}}]
    + [{"name": f"tf-dist-worker-{i}", "role": "worker", "request": {"cpu": "4", "memory": "16Gi"}}
       for i in range(4)],
}

# The demo's steady arrivals (schedweb.scheduling.demo_arrivals, DEMO_ARRIVALS=1 in `make run`):
# one job every few cycles, the shapes in turn, named `<name>-<time slot>`.
ARRIVAL_SHAPES: list[dict[str, Any]] = [
    _job("nlp", "eval-batch", "nlp-eval", "Pending", 2, "2", "8Gi", duration=90),
    _job("prod", "etl-hourly", "etl", "Pending", 3, "4", "16Gi", duration=150),
    _job("vision", "augment", "vision", "Pending", 4, "1", "4Gi", min_member=1, duration=120),
    _job("dev", "ci-run", "sandbox", "Pending", 2, "1", "2Gi", duration=45),
    _job("prod", "report", "serving-batch", "Pending", 2, "2", "4Gi", priority_class="high-priority",
         duration=60),
    _job("nlp", "finetune-small", "nlp-train", "Pending", 1, "8", "64Gi", gpu=2, pool="gpu", duration=180),
    _job("vision", "detector-eval", "vision", "Pending", 1, "4", "16Gi", gpu=1, pool="gpu", duration=120),
]

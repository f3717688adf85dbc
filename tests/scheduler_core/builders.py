"""Small builders for scheduler_core tests: readable clusters in a few lines.

    snap = snapshot(
        nodes=[node("n1"), node("n2", cpu="8", gpu=2)],
        queues=[queue("q1", weight=2)],
        jobs=[job("j1", queue="q1", min_available=2, tasks=replicas("w", 2, cpu="1"))],
    )
    result = run(snap, conf("enqueue, allocate", [["priority", "gang"], ["predicates", "proportion"]]))

Quantities are Kubernetes strings ("500m", "4Gi"); `gpu=N` is shorthand for nvidia.com/gpu.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler_core.framework.conf import SchedulerConf, parse_conf
from scheduler_core.model import (
    ClusterSnapshot,
    JobInfo,
    JobPhase,
    NodeInfo,
    QueueInfo,
    QueueState,
    TaskInfo,
    TaskStatus,
)
from scheduler_core.resources import Resource

GPU = "nvidia.com/gpu"


def res(cpu: Any = None, memory: Any = None, gpu: Any = None, **scalars: Any) -> Resource:
    """A Resource from quantities; omitted dimensions are absent. Extra scalars by keyword."""
    q: dict[str, Any] = {}
    if cpu is not None:
        q["cpu"] = cpu
    if memory is not None:
        q["memory"] = memory
    if gpu is not None:
        q[GPU] = gpu
    q.update(scalars)
    return Resource.from_quantities(q)


def _opt_res(q: dict[str, Any] | None) -> Resource | None:
    return None if q is None else Resource.from_quantities(q)


def node(name: str, cpu: Any = "4", memory: Any = "8Gi", pods: int = 110, gpu: Any = None,
         extra: dict[str, Any] | None = None, **kw: Any) -> NodeInfo:
    """A node; kw go to NodeInfo (labels, taints, unschedulable, usage, usage_time)."""
    q: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu is not None:
        q[GPU] = gpu
    q.update(extra or {})
    return NodeInfo(name=name, allocatable=Resource.from_quantities(q), **kw)


def queue(name: str, parent: str | None = None, weight: int = 1, *,
          capability: dict[str, Any] | None = None, deserved: dict[str, Any] | None = None,
          guarantee: dict[str, Any] | None = None, state: str | QueueState = QueueState.OPEN,
          **kw: Any) -> QueueInfo:
    """A queue; resource limits as quantity dicts ({"cpu": "10"}); kw go to QueueInfo."""
    return QueueInfo(name=name, parent=parent, weight=weight, capability=_opt_res(capability),
                     deserved=_opt_res(deserved), guarantee=_opt_res(guarantee),
                     state=QueueState(state), **kw)


def task(name: str, cpu: Any = "1", memory: Any = "1Gi", *, gpu: Any = None,
         status: str | TaskStatus = TaskStatus.PENDING, node: str | None = None,
         request: dict[str, Any] | None = None, **kw: Any) -> TaskInfo:
    """A task (namespace and job are filled in by `job`); `request` overrides cpu/memory/gpu.

    Pass cpu=None and memory=None for a best-effort task.
    """
    resreq = Resource.from_quantities(request) if request is not None else res(cpu, memory, gpu)
    return TaskInfo(uid=name, name=name, namespace="", job_uid="", resreq=resreq,
                    status=TaskStatus(status), node_name=node, **kw)


def replicas(prefix: str, n: int, **kw: Any) -> list[TaskInfo]:
    """n identical tasks named prefix-0 .. prefix-(n-1)."""
    return [task(f"{prefix}-{i}", **kw) for i in range(n)]


def job(name: str, queue: str = "q1", tasks: Iterable[TaskInfo] = (), *, namespace: str = "ns",
        min_available: int = 1, min_resources: dict[str, Any] | None = None,
        phase: str | JobPhase = JobPhase.INQUEUE, **kw: Any) -> JobInfo:
    """A job with its tasks (uids become "namespace/name").

    Default phase is Inqueue (admitted), the common starting point for allocate tests;
    pass phase="Pending" to test enqueue.
    """
    j = JobInfo(uid=f"{namespace}/{name}", name=name, namespace=namespace, queue=queue,
                min_available=min_available, min_resources=_opt_res(min_resources),
                phase=JobPhase(phase), **kw)
    for t in tasks:
        t.namespace = namespace
        t.uid = f"{namespace}/{t.name}"
        t.job_uid = j.uid
        j.tasks[t.uid] = t
    return j


def snapshot(nodes: Iterable[NodeInfo] = (), queues: Iterable[QueueInfo] | None = None,
             jobs: Iterable[JobInfo] = (), **kw: Any) -> ClusterSnapshot:
    """ClusterSnapshot.build; without `queues`, one default queue per queue name the jobs use."""
    jobs = list(jobs)
    if queues is None:
        queues = [QueueInfo(name=n) for n in sorted({j.queue for j in jobs})]
    return ClusterSnapshot.build(nodes=nodes, queues=queues, jobs=jobs, **kw)


def conf(actions: str | list[str] = "enqueue, allocate",
         tiers: Iterable[Iterable[str | dict[str, Any]]] = (), **configurations: dict) -> SchedulerConf:
    """A SchedulerConf: tiers are lists of plugin names or full plugin dicts."""
    raw_tiers = [{"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers]
    data: dict[str, Any] = {"actions": actions, "tiers": raw_tiers}
    if configurations:
        data["configurations"] = [{"name": k, "arguments": v} for k, v in configurations.items()]
    return parse_conf(data)


def run(snap: ClusterSnapshot, cfg: SchedulerConf | None = None) -> Any:
    """run_session on a snapshot (default conf when cfg is None)."""
    from scheduler_core.scheduler import run_session

    return run_session(snap, cfg)

"""Load the demo cluster (demo_data) through the services. Idempotent: objects that already
exist (by name) are left alone, so a second run changes nothing. The scheduler configuration it
activates (when none is active) is schedweb's default, hierarchical capacity."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from schedweb.core import services
from schedweb.core.default_queue import default_queue_name
from schedweb.core.demo_data import (
    CLOSED_QUEUES,
    DEFAULT_QUEUE_DESERVED,
    JOBS,
    NAMESPACE_QUOTAS,
    NODES,
    PRIORITY_CLASSES,
    QUEUES,
    TF_JOB,
)
from schedweb.core.models import (
    NODE_BOUND_TASK_STATUSES,
    Job,
    NamespaceQuota,
    Node,
    PriorityClass,
    Queue,
    SchedulerConfig,
    Task,
)
from schedweb.core.validation import parse_resources
from schedweb.scheduling.default_conf import NAMED_CONFS

TASK_STATUS_OF_PHASE = {"Running": "Running", "Pending": "Pending", "Inqueue": "Pending",
                        "Completed": "Succeeded", "Cancelled": "Failed"}


def database_is_empty() -> bool:
    """True when there are no nodes, no jobs and no queue but the default one (a fresh database:
    core's migrations create the default queue)."""
    return not (Queue.objects.exclude(name=default_queue_name()).exists() or Node.objects.exists()
                or Job.objects.exists())


class _Placer:
    """First-fit placement of the demo's Running tasks onto schedulable nodes of a pool."""

    def __init__(self) -> None:
        self.free: dict[str, dict[str, float]] = {}
        self.pool: dict[str, str] = {}
        for node in Node.objects.filter(unschedulable=False).order_by("name"):
            self.free[node.name] = {k: float(v) for k, v in node.allocatable.items()}
            self.pool[node.name] = node.labels.get("pool", "general")
        busy = Task.objects.filter(status__in=NODE_BOUND_TASK_STATUSES, node__isnull=False)
        for node_name, request in busy.values_list("node__name", "request"):
            if node_name in self.free:
                self._take(node_name, request)

    def _take(self, name: str, request: dict[str, float]) -> None:
        free = self.free[name]
        for key, value in request.items():
            free[key] = free.get(key, 0.0) - float(value)
        free["pods"] = free.get("pods", 0.0) - 1

    def place(self, pool: str, request: dict[str, float]) -> str:
        """The first node (by name) of `pool` with room for `request`; it is then taken."""
        for name, free in self.free.items():
            fits = free.get("pods", 0) >= 1 and all(free.get(k, 0.0) >= v for k, v in request.items())
            if self.pool[name] == pool and fits:
                self._take(name, request)
                return name
        raise RuntimeError(f"demo data error: no {pool} node has room for {request}")


def task_duration(base: float, index: int) -> float:
    """Task `index`'s run time: the job's `base` seconds, 10% longer per index modulo 4, so a
    job's tasks end at slightly different times (deterministic)."""
    return round(base * (1 + (index % 4) / 10), 1)


def demo_tasks(spec: dict[str, Any], placer: _Placer | None = None,
               name: str | None = None) -> list[dict[str, Any]]:
    """The task dicts of a demo job spec (demo_data): named `<name>-<i>` (default: the spec's
    name), Running ones placed by `placer`, each with its duration when the spec has one."""
    name = name or spec["name"]
    if isinstance(spec["tasks"], list):
        tasks = [dict(task) for task in spec["tasks"]]
    else:
        status = TASK_STATUS_OF_PHASE[spec["phase"]]
        stored = parse_resources(spec["task"]["request"], "request") or {}
        tasks = []
        for i in range(spec["tasks"]):
            task = {**spec["task"], "name": f"{name}-{i}", "status": status}
            if status == "Running":
                if placer is None:
                    raise ValueError(f"demo job {name} has Running tasks: a placer is needed")
                task["node"] = placer.place(spec["pool"], {k: v for k, v in stored.items() if v})
            tasks.append(task)
    if "duration" in spec:
        for i, task in enumerate(tasks):
            task["duration"] = task_duration(spec["duration"], i)
    return tasks


@transaction.atomic
def load_demo() -> dict[str, int]:
    """Create the missing demo objects; returns how many of each kind were created."""
    created = {"priority_classes": 0, "queues": 0, "nodes": 0, "namespace_quotas": 0, "jobs": 0,
               "scheduler_configs": 0}
    for spec in PRIORITY_CLASSES:
        if not PriorityClass.objects.filter(name=spec["name"]).exists():
            services.priority_class_create(**spec)
            created["priority_classes"] += 1
    new_queues: set[str] = set()
    for spec in QUEUES:
        if not Queue.objects.filter(name=spec["name"]).exists():
            services.queue_create(**spec)
            new_queues.add(spec["name"])
    created["queues"] = len(new_queues)
    # The default queue (made by a migration) gets a deserved share like every demo queue, once.
    default = Queue.objects.filter(name=default_queue_name(), deserved__isnull=True, parent=None).first()
    if default is not None:
        services.queue_update(queue=default, deserved=DEFAULT_QUEUE_DESERVED)
    for spec in NODES:
        if not Node.objects.filter(name=spec["name"]).exists():
            services.node_create(**spec)
            created["nodes"] += 1
    for spec in NAMESPACE_QUOTAS:
        if not NamespaceQuota.objects.filter(namespace=spec["namespace"]).exists():
            services.namespace_quota_set(**spec)
            created["namespace_quotas"] += 1
    placer = _Placer()
    for spec in [*JOBS, TF_JOB]:
        if Job.objects.filter(namespace=spec["namespace"], name=spec["name"]).exists():
            continue
        tasks = demo_tasks(spec, placer)
        extra = {k: spec[k] for k in ("priority_class", "sla_waiting_time", "min_task_member") if k in spec}
        services.job_submit(namespace=spec["namespace"], name=spec["name"], queue=spec["queue"],
                            phase=spec["phase"], min_member=spec["min_member"], tasks=tasks, **extra)
        created["jobs"] += 1
    for name in CLOSED_QUEUES:
        if name in new_queues:
            services.queue_set_state(queue=Queue.objects.get(name=name), state="Closed")
    if not SchedulerConfig.objects.filter(active=True).exists():
        yaml, comment = NAMED_CONFS["schedweb-default"]
        services.scheduler_config_activate(yaml=yaml, comment=comment)
        created["scheduler_configs"] += 1
    return created

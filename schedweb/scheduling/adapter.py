"""Database rows -> ClusterSnapshot, in a handful of set-based queries returning plain tuples.

`load_state(now)` reads priority classes, queues, nodes, namespace quotas, jobs and tasks with
one `values_list` query each and builds the scheduler_core objects directly. It also keeps what
the write phase needs to check that a row is still what the snapshot saw (ids, statuses,
`updated` stamps, the jobs' current reasons).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import FloatField, Func, Q, TextField

from scheduler_core.model import (
    OCCUPYING_STATUSES,
    ClusterSnapshot,
    JobInfo,
    JobPhase,
    NamespaceInfo,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    QueueState,
    TaskInfo,
)
from scheduler_core.model import TaskStatus as CoreStatus
from scheduler_core.resources import Resource
from schedweb.core.models import (
    TERMINAL_JOB_PHASES,
    Job,
    NamespaceQuota,
    Node,
    PriorityClass,
    Queue,
    Task,
    TaskStatus,
)

# Tasks in these statuses hold (or are promised) room on a node: loaded even for finished jobs.
HOLDING_STATUSES = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
                    TaskStatus.RUNNING, TaskStatus.RELEASING)
ACTIVE_JOB_FILTER = ~Q(phase__in=TERMINAL_JOB_PHASES)


class Epoch(Func):
    """Unix seconds of a datetime column, computed by the database (no datetime parsing here)."""

    output_field = FloatField()
    template = "EXTRACT(EPOCH FROM %(expressions)s)::float8"

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        """SQLite stores datetimes as text: julianday() reads it."""
        template = "((julianday(%(expressions)s) - 2440587.5) * 86400.0)"
        return self.as_sql(compiler, connection, template=template, **extra)


class AsText(Func):
    """A JSON or datetime column as its text: decoded here once per distinct value (tasks repeat)."""

    output_field = TextField()
    template = "(%(expressions)s)::text"

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        """SQLite already stores both as text."""
        return self.as_sql(compiler, connection, template="%(expressions)s", **extra)


def memo_json() -> Callable[[str | None], Any]:
    """json.loads with a cache by text; the decoded values are shared, so treat them read-only."""
    cache: dict[str, Any] = {}

    def load(text: str | None) -> Any:
        if text is None:
            return None
        value = cache.get(text)
        if value is None:
            value = cache[text] = json.loads(text)
        return value

    return load


@dataclass(slots=True)
class JobRow:
    """A job as loaded: id, phase and current reason (the write phase compares against them)."""

    id: int
    phase: str
    reason_code: str
    reason_message: str
    reason_details: dict
    reason_since: datetime | None


@dataclass
class LoadedState:
    """The snapshot plus the row identities the write phase needs."""

    snapshot: ClusterSnapshot
    # uid -> (id, status, `updated` as the database's text: compared back exactly at write time)
    tasks: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    jobs: dict[str, JobRow] = field(default_factory=dict)                      # uid -> row
    node_ids: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    queries: int = 0


def _ts(value: datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def _res(data: dict | None) -> Resource | None:
    return Resource.from_canonical(data) if data is not None else None


def load_priority_classes() -> dict[int, PriorityClassInfo]:
    """Priority classes by id."""
    return {pk: PriorityClassInfo(name=name, value=value, preemption_policy=policy)
            for pk, name, value, policy in PriorityClass.objects.values_list(
                "id", "name", "value", "preemption_policy")}


def load_queues() -> tuple[list[QueueInfo], dict[int, str]]:
    """QueueInfo objects (parents by name) and queue names by id."""
    rows = list(Queue.objects.values_list(
        "id", "name", "parent_id", "weight", "priority", "state", "reclaimable", "capability",
        "deserved", "guarantee", "annotations", "created"))
    names = {row[0]: row[1] for row in rows}
    queues = [QueueInfo(name=name, parent=names.get(parent_id) if parent_id else None, weight=weight,
                        priority=priority, state=QueueState(state), reclaimable=reclaimable,
                        capability=_res(cap), deserved=_res(des), guarantee=_res(gua),
                        annotations=annotations or {}, created=_ts(created))
              for (_, name, parent_id, weight, priority, state, reclaimable, cap, des, gua, annotations,
                   created) in rows]
    return queues, names


def load_nodes() -> tuple[list[NodeInfo], dict[int, str]]:
    """NodeInfo objects (usage as percent when reported) and node names by id."""
    nodes: list[NodeInfo] = []
    names: dict[int, str] = {}
    for pk, name, alloc, labels, taints, unsched, ucpu, umem, uwhen in Node.objects.values_list(
            "id", "name", "allocatable", "labels", "taints", "unschedulable", "usage_cpu",
            "usage_memory", "usage_updated"):
        names[pk] = name
        usage = None
        if ucpu is not None or umem is not None:
            usage = {k: v for k, v in (("cpu", ucpu), ("memory", umem)) if v is not None}
        nodes.append(NodeInfo(name=name, allocatable=Resource.from_canonical(alloc or {}),
                              labels=labels or {}, taints=taints or [], unschedulable=unsched,
                              usage=usage, usage_time=uwhen.timestamp() if uwhen else None))
    return nodes, names


def load_state(now: datetime) -> LoadedState:
    """Read the cluster in six queries and build the snapshot for a session at `now`."""
    pcs = load_priority_classes()
    queues, queue_names = load_queues()
    nodes, node_names = load_nodes()
    quotas = dict(NamespaceQuota.objects.values_list("namespace", "hard"))
    state = LoadedState(snapshot=ClusterSnapshot(), queries=6)
    state.node_ids = {name: pk for pk, name in node_names.items()}

    holding = Q(id__in=Task.objects.filter(status__in=HOLDING_STATUSES).values("job_id"))
    jobs_by_id: dict[int, JobInfo] = {}
    for (pk, ns, name, queue_id, min_member, min_task_member, min_res, pc_id, phase, preemptable,
         sla, created, reason_code, reason_message, reason_details, reason_since) in Job.objects.filter(
            ACTIVE_JOB_FILTER | holding).values_list(
            "id", "namespace", "name", "queue_id", "min_member", "min_task_member", "min_resources",
            "priority_class_id", "phase", "preemptable", "sla_waiting_time", Epoch("created"), "reason_code",
            "reason_message", "reason_details", "reason_since"):
        queue = queue_names.get(queue_id)
        if queue is None:  # submitted after the queue query: next cycle sees both
            continue
        pc = pcs.get(pc_id) if pc_id else None
        uid = f"{ns}/{name}"
        # A finished (cancelled) job is only here for its Releasing tasks: it holds, never asks.
        core_phase = JobPhase(phase) if phase not in TERMINAL_JOB_PHASES else JobPhase.RUNNING
        jobs_by_id[pk] = JobInfo(uid=uid, name=name, namespace=ns, queue=queue, min_available=min_member,
                                 task_min_available=min_task_member or {}, min_resources=_res(min_res),
                                 priority=pc.value if pc else 0, priority_class=pc.name if pc else "",
                                 phase=core_phase, preemptable=preemptable, created=created,
                                 sla_waiting_time=sla)
        state.jobs[uid] = JobRow(pk, phase, reason_code, reason_message, reason_details or {}, reason_since)

    tasks: list[TaskInfo] = []
    used: dict[str, Resource] = {}
    task_filter = (Q(job__phase__in=_active_phases()) & ~Q(status=TaskStatus.FAILED)) | Q(
        status__in=HOLDING_STATUSES)
    js = memo_json()
    requests: dict[str, Resource] = {}
    for (pk, name, job_id, role, request, status, node_id, priority, selector, tolerations, affinity,
         policy, preemptable, labels, duration, created, updated) in Task.objects.filter(
            task_filter).values_list(
            "id", "name", "job_id", "role", AsText("request"), "status", "node_id", "priority",
            AsText("node_selector"), AsText("tolerations"), AsText("affinity"), "preemption_policy",
            "preemptable", AsText("labels"), "duration", Epoch("created"), AsText("updated")):
        job = jobs_by_id.get(job_id)
        if job is None:
            continue
        node = node_names.get(node_id) if node_id else None
        core_status = CoreStatus(status)
        nominated = None
        if core_status is CoreStatus.PIPELINED:
            # Pipelining lasts one session in Volcano (a nominated node on a Pending pod).
            core_status, nominated, node = CoreStatus.PENDING, node, None
        elif core_status not in OCCUPYING_STATUSES:
            node = None
        elif node is None:
            state.warnings.append(f"task {job.namespace}/{name}: {status} on an unknown node; skipped")
            continue
        proto = requests.get(request)
        if proto is None:
            proto = requests[request] = Resource.from_canonical(js(request) or {})
        resreq = proto.clone()
        uid = f"{job.namespace}/{name}"
        tasks.append(TaskInfo(
            uid=uid, name=name, namespace=job.namespace, job_uid=job.uid, resreq=resreq,
            status=core_status, node_name=node, role=role,
            priority=priority if priority is not None else job.priority, preemption_policy=policy,
            preemptable=preemptable, node_selector=js(selector) or {}, tolerations=js(tolerations) or [],
            affinity=js(affinity), labels=js(labels) or {}, created=created, duration=duration,
            nominated_node=nominated))
        state.tasks[uid] = (pk, status, updated)
        if core_status in OCCUPYING_STATUSES:
            used.setdefault(job.namespace, Resource.empty()).add(resreq)

    namespaces = {job.namespace for job in jobs_by_id.values()} | set(quotas)
    state.snapshot = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs_by_id.values(), tasks=tasks,
        namespaces=[NamespaceInfo(name=ns, quota=_res(quotas.get(ns)), used=used.get(ns, Resource.empty()))
                    for ns in sorted(namespaces)],
        priority_classes=pcs.values(), now=now.timestamp())
    return state


def _active_phases() -> list[str]:
    from schedweb.core.models import JobPhase as DbPhase

    return [p for p in DbPhase.values if p not in TERMINAL_JOB_PHASES]


def figures_json(value: Resource | None) -> dict[str, Any] | None:
    """A queue figure in stored units (None stays None)."""
    return value.to_canonical() if value is not None else None

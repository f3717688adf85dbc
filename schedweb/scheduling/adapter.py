"""Database rows -> ClusterSnapshot, in a handful of set-based queries returning plain tuples.

`load_state(now)` reads priority classes, queues, nodes, namespace quotas, jobs and tasks with
one raw SELECT each (schedweb.scheduling.snapshot_sql: no ORM, no per-row converters) and
builds the scheduler_core objects directly. It also keeps what the write phase needs to check
that a row is still what the snapshot saw (ids, statuses, `updated` stamps, current reasons).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

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
from schedweb.core.models import TERMINAL_JOB_PHASES
from schedweb.scheduling.snapshot_sql import HOLDING_STATUSES, fetch_all

__all__ = ["HOLDING_STATUSES", "JobRow", "LoadedState", "figures_json", "load_state", "memo_json"]


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
    # uid -> (id, status, `updated` as the database's text: compared back exactly at write time,
    # job id: the write phase locks the jobs of the tasks it changes)
    tasks: dict[str, tuple[int, str, str, int]] = field(default_factory=dict)
    jobs: dict[str, JobRow] = field(default_factory=dict)                      # uid -> row
    node_ids: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    queries: int = 0


def _aware(value: datetime | None) -> datetime | None:
    # SQLite's driver gives naive datetimes (stored in UTC); PostgreSQL's are aware already.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _ts(value: datetime | None) -> float:
    value = _aware(value)
    return value.timestamp() if value is not None else 0.0


def _res(data: dict | None) -> Resource | None:
    return Resource.from_canonical(data) if data is not None else None


def _loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def load_priority_classes(rows: list[tuple] | None = None) -> dict[int, PriorityClassInfo]:
    """Priority classes by id."""
    if rows is None:
        rows = fetch_all(["priority_classes"])["priority_classes"]
    return {pk: PriorityClassInfo(name=name, value=value, preemption_policy=policy)
            for pk, name, value, policy in rows}


def load_queues(rows: list[tuple] | None = None) -> tuple[list[QueueInfo], dict[int, str]]:
    """QueueInfo objects (parents by name) and queue names by id."""
    if rows is None:
        rows = fetch_all(["queues"])["queues"]
    names = {row[0]: row[1] for row in rows}
    queues = [QueueInfo(name=name, parent=names.get(parent_id) if parent_id else None, weight=weight,
                        priority=priority, state=QueueState(state), reclaimable=bool(reclaimable),
                        capability=_res(_loads(cap)), deserved=_res(_loads(des)),
                        guarantee=_res(_loads(gua)), annotations=_loads(annotations) or {},
                        created=_ts(created))
              for (_, name, parent_id, weight, priority, state, reclaimable, cap, des, gua, annotations,
                   created) in rows]
    return queues, names


def load_nodes(rows: list[tuple] | None = None) -> tuple[list[NodeInfo], dict[int, str]]:
    """NodeInfo objects (usage as percent when reported) and node names by id."""
    if rows is None:
        rows = fetch_all(["nodes"])["nodes"]
    nodes: list[NodeInfo] = []
    names: dict[int, str] = {}
    loads = json.loads
    for pk, name, alloc, labels, taints, unsched, ucpu, umem, uwhen in rows:
        names[pk] = name
        usage = None
        if ucpu is not None or umem is not None:
            usage = {k: v for k, v in (("cpu", ucpu), ("memory", umem)) if v is not None}
        nodes.append(NodeInfo(name=name, allocatable=Resource.from_canonical(loads(alloc) if alloc else {}),
                              labels=loads(labels) or {}, taints=loads(taints) or [],
                              unschedulable=bool(unsched), usage=usage,
                              usage_time=_ts(uwhen) if uwhen else None))
    return nodes, names


# Enum members by value: a dict lookup instead of an Enum call per row (tens of thousands of rows).
_CORE_STATUS = {s.value: s for s in CoreStatus}
_CORE_PHASE = {p.value: p for p in JobPhase}
_TERMINAL = frozenset(TERMINAL_JOB_PHASES)
_PIPELINED = CoreStatus.PIPELINED


def load_state(now: datetime) -> LoadedState:
    """Read the cluster in six queries and build the snapshot for a session at `now`."""
    rows = fetch_all(["priority_classes", "queues", "nodes", "quotas", "jobs", "tasks"])
    pcs = load_priority_classes(rows["priority_classes"])
    queues, queue_names = load_queues(rows["queues"])
    nodes, node_names = load_nodes(rows["nodes"])
    quotas = {ns: _loads(hard) for ns, hard in rows["quotas"]}
    state = LoadedState(snapshot=ClusterSnapshot(), queries=6)
    state.node_ids = {name: pk for pk, name in node_names.items()}
    # Decoded JSON is shared between rows with the same text: the snapshot only reads it.
    js = memo_json()
    min_protos: dict[str, Resource] = {}

    jobs_by_id: dict[int, JobInfo] = {}
    job_rows = state.jobs
    running = JobPhase.RUNNING
    for (pk, ns, name, queue_id, min_member, min_task_member, min_res, pc_id, phase, preemptable,
         sla, created, reason_code, reason_message, reason_details, reason_since) in rows["jobs"]:
        queue = queue_names.get(queue_id)
        if queue is None:  # submitted after the queue query: next cycle sees both
            continue
        pc = pcs.get(pc_id) if pc_id else None
        uid = f"{ns}/{name}"
        # A finished (cancelled) job is only here for its Releasing tasks: it holds, never asks.
        core_phase = _CORE_PHASE[phase] if phase not in _TERMINAL else running
        if min_res is None:
            min_resources = None
        else:
            min_resources = min_protos.get(min_res)
            if min_resources is None:
                min_resources = min_protos[min_res] = Resource.from_canonical(js(min_res))
            min_resources = min_resources.clone()
        jobs_by_id[pk] = JobInfo(uid=uid, name=name, namespace=ns, queue=queue, min_available=min_member,
                                 task_min_available=js(min_task_member) or {}, min_resources=min_resources,
                                 priority=pc.value if pc else 0, priority_class=pc.name if pc else "",
                                 phase=core_phase, preemptable=bool(preemptable), created=created,
                                 sla_waiting_time=sla)
        job_rows[uid] = JobRow(pk, phase, reason_code, reason_message, js(reason_details) or {},
                               _aware(reason_since))

    tasks: list[TaskInfo] = []
    used: dict[str, Resource] = {}
    # (request, selector, tolerations, affinity, labels) texts -> decoded: tasks of a job share them.
    specs: dict[tuple, tuple[Resource, dict, list, Any, dict]] = {}
    task_rows, warnings = state.tasks, state.warnings
    statuses, occupying, pending = _CORE_STATUS, OCCUPYING_STATUSES, CoreStatus.PENDING
    last_job_id, job, ns, job_uid, job_priority = None, None, "", "", 0
    for (pk, name, job_id, role, request, status, node_id, priority, selector, tolerations, affinity,
         policy, preemptable, labels, duration, created, updated) in rows["tasks"]:
        if job_id != last_job_id:  # rows come ordered by job: look the job up once per job
            last_job_id, job = job_id, jobs_by_id.get(job_id)
            if job is not None:
                ns, job_uid, job_priority = job.namespace, job.uid, job.priority
        if job is None:
            continue
        node = node_names.get(node_id) if node_id else None
        core_status = statuses[status]
        nominated = None
        if core_status is _PIPELINED:
            # Pipelining lasts one session in Volcano (a nominated node on a Pending pod).
            core_status, nominated, node = pending, node, None
        elif core_status not in occupying:
            node = None
        elif node is None:
            warnings.append(f"task {ns}/{name}: {status} on an unknown node; skipped")
            continue
        key = (request, selector, tolerations, affinity, labels)
        spec = specs.get(key)
        if spec is None:
            spec = specs[key] = (Resource.from_canonical(js(request) or {}), js(selector) or {},
                                 js(tolerations) or [], js(affinity), js(labels) or {})
        resreq = spec[0].clone()
        uid = f"{ns}/{name}"
        tasks.append(TaskInfo(
            uid=uid, name=name, namespace=ns, job_uid=job_uid, resreq=resreq, status=core_status,
            node_name=node, role=role, priority=priority if priority is not None else job_priority,
            preemption_policy=policy, preemptable=bool(preemptable), node_selector=spec[1],
            tolerations=spec[2], affinity=spec[3], labels=spec[4], created=created, duration=duration,
            nominated_node=nominated))
        task_rows[uid] = (pk, status, updated, job_id)
        if core_status in occupying:
            u = used.get(ns)
            if u is None:
                u = used[ns] = Resource.empty()
            u.add(resreq)

    namespaces = {job.namespace for job in jobs_by_id.values()} | set(quotas)
    state.snapshot = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs_by_id.values(), tasks=tasks,
        namespaces=[NamespaceInfo(name=ns, quota=_res(quotas.get(ns)), used=used.get(ns, Resource.empty()))
                    for ns in sorted(namespaces)],
        priority_classes=pcs.values(), now=now.timestamp())
    return state


def figures_json(value: Resource | None) -> dict[str, Any] | None:
    """A queue figure in stored units (None stays None)."""
    return value.to_canonical() if value is not None else None

"""Database rows -> ClusterSnapshot, in a handful of set-based queries returning declared rows.

`load_state(now)` reads priority classes, queues, nodes, namespace quotas, jobs and tasks with
one raw SELECT each (schedweb.scheduling.snapshot_sql: no ORM, rows typed by one declaration)
and builds the scheduler_core objects directly. It also keeps what the write phase needs to
check that a row is still what the snapshot saw (ids, statuses, `updated` stamps, current
reasons). The row -> object builders (`Decoder`) are shared with the incremental loader
(schedweb.scheduling.incremental), which applies only the rows that changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
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
from schedweb.core.models import UNSCHEDULED_JOB_PHASES
from schedweb.scheduling.snapshot_sql import HOLDING_STATUSES, fetch_all, fetch_specs

__all__ = ["HOLDING_STATUSES", "Decoder", "JobRow", "LoadedState", "figures_json", "load_state", "memo_json",
           "task_key"]


def task_key(namespace: str, job: str, task: str) -> str:
    """The scheduler's key of a task: "namespace/job/task" (task names are unique per job, so two
    jobs of a namespace may both have a task `w0`)."""
    return f"{namespace}/{job}/{task}"


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
    """A job as loaded: id, phase and current reason (the write phase compares against them),
    and the scheduler it names (shard_runtime routes it by that, from memory)."""

    id: int
    phase: str
    reason_code: str
    reason_message: str
    reason_details: dict
    reason_since: datetime | None
    scheduler_name: str


@dataclass
class LoadedState:
    """The snapshot plus the row identities the write phase needs."""

    snapshot: ClusterSnapshot
    # task key ("namespace/job/task", task_key) -> (id, status, `updated` as the database's text:
    # compared back exactly at write time,
    # job id: the write phase locks the jobs of the tasks it changes)
    tasks: dict[str, tuple[int, str, str, int]] = field(default_factory=dict)
    jobs: dict[str, JobRow] = field(default_factory=dict)                      # uid -> row
    node_ids: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    queries: int = 0
    # Tasks stored as Pipelined (loaded Pending with a nomination): the cycle writes them back.
    pipelined: set[str] = field(default_factory=set)
    full: bool = True  # a full load (False: the incremental loader applied changes only)
    # What the incremental loader needs to apply later rows: names by id, classes, quota texts.
    queue_names: dict[int, str] = field(default_factory=dict)
    priority_classes: dict[int, PriorityClassInfo] = field(default_factory=dict)
    quotas: dict[str, str | None] = field(default_factory=dict)
    # hash() of each node, job and task row as last applied, by table and id (what the rolling
    # re-read compares the database's rows with: schedweb.scheduling.reread).
    row_hashes: dict[str, dict[int, int]] = field(
        default_factory=lambda: {"core_node": {}, "core_job": {}, "core_task": {}})


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


# Enum members by value: a dict lookup instead of an Enum call per row (tens of thousands of rows).
_CORE_STATUS = {s.value: s for s in CoreStatus}
_CORE_PHASE = {p.value: p for p in JobPhase}
_TERMINAL = frozenset(UNSCHEDULED_JOB_PHASES)  # finished or suspended
_PIPELINED = CoreStatus.PIPELINED


def core_phase(phase: str) -> JobPhase:
    """The snapshot's phase of a stored phase: a finished (cancelled) or suspended job is only
    loaded for its Releasing tasks, so it holds like a Running job and never asks."""
    return _CORE_PHASE[phase] if phase not in _TERMINAL else JobPhase.RUNNING


def priority_classes_of(rows: Iterable[Any]) -> dict[int, PriorityClassInfo]:
    """Priority classes by id."""
    return {r.id: PriorityClassInfo(name=r.name, value=r.value, preemption_policy=r.preemption_policy)
            for r in rows}


def queues_of(rows: list[Any]) -> tuple[list[QueueInfo], dict[int, str]]:
    """QueueInfo objects (parents by name) and queue names by id."""
    names = {r.id: r.name for r in rows}
    queues = [QueueInfo(name=r.name, parent=names.get(r.parent_id) if r.parent_id else None, weight=r.weight,
                        priority=r.priority, state=QueueState(r.state), reclaimable=bool(r.reclaimable),
                        capability=_res(_loads(r.capability)), deserved=_res(_loads(r.deserved)),
                        guarantee=_res(_loads(r.guarantee)), annotations=_loads(r.annotations) or {},
                        created=_ts(r.created))
              for r in rows]
    return queues, names


def node_of(r: Any) -> NodeInfo:
    """A NodeInfo from its row (usage as percent when reported), no tasks yet."""
    usage = None
    if r.usage_cpu is not None or r.usage_memory is not None:
        usage = {k: v for k, v in (("cpu", r.usage_cpu), ("memory", r.usage_memory)) if v is not None}
    loads = json.loads
    allocatable = Resource.from_canonical(loads(r.allocatable) if r.allocatable else {})
    return NodeInfo(name=r.name, allocatable=allocatable,
                    labels=loads(r.labels) or {}, taints=loads(r.taints) or [],
                    unschedulable=bool(r.unschedulable), usage=usage,
                    usage_time=_ts(r.usage_updated) if r.usage_updated else None)


def namespace_of(name: str, quota: Any, used: Resource | None = None) -> NamespaceInfo:
    """A NamespaceInfo: its quota (stored JSON text, or None) and what its tasks use."""
    return NamespaceInfo(name=name, quota=_res(_loads(quota)),
                         used=used if used is not None else Resource.empty())


class Decoder:
    """Rows of jobs and tasks -> JobInfo / TaskInfo, sharing decoded JSON between equal texts.

    Kept between cycles by the incremental loader: decoded specs are read-only and shared by
    every task with the same request text and pod spec (core.TaskSpec rows never change, so a
    spec decoded once stays valid; `prefetch` reads the ones not decoded yet).
    """

    def __init__(self) -> None:
        self.js = memo_json()
        self._min: dict[str, Resource] = {}
        # TaskSpec id -> (selector, tolerations, affinity, spread, labels), decoded.
        self._pod_specs: dict[int, tuple[dict, list, Any, list, dict]] = {}
        # (request text, TaskSpec id) -> (request, *pod spec).
        self._specs: dict[tuple, tuple[Resource, dict, list, Any, list, dict]] = {}

    def prefetch(self, rows: Iterable[Any]) -> int:
        """Read, in one statement, the pod specs of task `rows` not decoded yet; returns the
        statements run (0 or 1)."""
        known = self._pod_specs
        missing = sorted({r.spec_id for r in rows if r.spec_id not in known})
        if not missing:
            return 0
        js = self.js
        for r in fetch_specs(missing):
            known[r.id] = (js(r.node_selector) or {}, js(r.tolerations) or [], js(r.affinity),
                           js(r.topology_spread_constraints) or [], js(r.labels) or {})
        return 1

    def job(self, r: Any, queue: str, pc: PriorityClassInfo | None) -> tuple[JobInfo, JobRow]:
        """The JobInfo (no tasks) and the JobRow of a job row in queue `queue`."""
        min_resources = None
        if r.min_resources is not None:
            proto = self._min.get(r.min_resources)
            if proto is None:
                proto = self._min[r.min_resources] = Resource.from_canonical(self.js(r.min_resources))
            min_resources = proto.clone()
        job = JobInfo(uid=f"{r.namespace}/{r.name}", name=r.name, namespace=r.namespace, queue=queue,
                      min_available=r.min_member, task_min_available=self.js(r.min_task_member) or {},
                      min_resources=min_resources, priority=pc.value if pc else 0,
                      priority_class=pc.name if pc else "", phase=core_phase(r.phase),
                      preemptable=bool(r.preemptable), created=r.created, sla_waiting_time=r.sla_waiting_time)
        return job, JobRow(r.id, r.phase, r.reason_code, r.reason_message, self.js(r.reason_details) or {},
                           _aware(r.reason_since), r.scheduler_name)

    def task(self, r: Any, job: JobInfo, node: str | None) -> TaskInfo:
        """The TaskInfo of a task row of `job`; `node` is its node's name (None when it has none).

        A stored Pipelined task comes back Pending with `nominated_node` (a nomination lasts one
        session in Volcano); a task that holds no node carries none.
        """
        status = _CORE_STATUS[r.status]
        nominated = None
        if status is _PIPELINED:
            status, nominated, node = CoreStatus.PENDING, node, None
        elif status not in OCCUPYING_STATUSES:
            node = None
        key = (r.request, r.spec_id)
        spec = self._specs.get(key)
        if spec is None:
            pod = self._pod_specs.get(r.spec_id)
            if pod is None:  # a caller that did not prefetch its rows: this one's spec alone
                self.prefetch((r,))
                pod = self._pod_specs[r.spec_id]
            spec = self._specs[key] = (Resource.from_canonical(self.js(r.request) or {}), *pod)
        return TaskInfo(
            uid=f"{job.uid}/{r.name}", name=r.name, namespace=job.namespace, job_uid=job.uid,
            resreq=spec[0].clone(), status=status, node_name=node, role=r.role,
            priority=r.priority if r.priority is not None else job.priority,
            preemption_policy=r.preemption_policy,
            preemptable=bool(r.preemptable), node_selector=spec[1], tolerations=spec[2], affinity=spec[3],
            labels=spec[5], created=r.created, duration=r.duration, topology_spread_constraints=spec[4],
            nominated_node=nominated, started=r.started)


def task_holds_unknown_node(r: Any, node: str | None) -> bool:
    """A task in a node-holding status whose node the load did not see (created meanwhile)."""
    return node is None and _CORE_STATUS[r.status] in OCCUPYING_STATUSES


def load_state(now: datetime, decoder: Decoder | None = None) -> LoadedState:
    """Read the cluster in six queries (seven when tasks refer to specs not decoded yet) and build
    the snapshot for a session at `now`."""
    rows = fetch_all(["priority_classes", "queues", "nodes", "quotas", "jobs", "tasks"])
    dec = decoder or Decoder()
    spec_queries = dec.prefetch(rows["tasks"])
    pcs = priority_classes_of(rows["priority_classes"])
    queues, queue_names = queues_of(rows["queues"])
    nodes = [node_of(r) for r in rows["nodes"]]
    node_names = {r.id: r.name for r in rows["nodes"]}
    quotas = {r.namespace: r.hard for r in rows["quotas"]}
    state = LoadedState(snapshot=ClusterSnapshot(), queries=6 + spec_queries,
                        queue_names=queue_names, priority_classes=pcs, quotas=quotas)
    state.node_ids = {name: pk for pk, name in node_names.items()}
    hashes = state.row_hashes
    node_hashes, job_hashes, task_hashes = hashes["core_node"], hashes["core_job"], hashes["core_task"]
    for r in rows["nodes"]:
        node_hashes[r.id] = hash(r)

    jobs_by_id: dict[int, JobInfo] = {}
    job_rows = state.jobs
    for r in rows["jobs"]:
        queue = queue_names.get(r.queue_id)
        if queue is None:  # submitted after the queue query: next cycle sees both
            continue
        job, job_rows[f"{r.namespace}/{r.name}"] = dec.job(r, queue, pcs.get(r.priority_class_id))
        jobs_by_id[r.id] = job
        job_hashes[r.id] = hash(r)

    tasks: list[TaskInfo] = []
    used: dict[str, Resource] = {}
    task_rows, warnings, pipelined = state.tasks, state.warnings, state.pipelined
    occupying = OCCUPYING_STATUSES
    last_job_id, job = None, None
    for r in rows["tasks"]:
        if r.job_id != last_job_id:  # rows come ordered by job: look the job up once per job
            last_job_id, job = r.job_id, jobs_by_id.get(r.job_id)
        if job is None:
            continue
        node = node_names.get(r.node_id) if r.node_id else None
        if task_holds_unknown_node(r, node):
            warnings.append(f"task {job.uid}/{r.name}: {r.status} on an unknown node; skipped")
            continue
        task = dec.task(r, job, node)
        tasks.append(task)
        task_rows[task.uid] = (r.id, r.status, r.updated, r.job_id)
        task_hashes[r.id] = hash(r)
        if r.status == _PIPELINED:
            pipelined.add(task.uid)
        if task.status in occupying:
            u = used.get(job.namespace)
            if u is None:
                u = used[job.namespace] = Resource.empty()
            u.add(task.resreq)

    namespaces = {job.namespace for job in jobs_by_id.values()} | set(quotas)
    state.snapshot = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs_by_id.values(), tasks=tasks,
        namespaces=[namespace_of(ns, quotas.get(ns), used.get(ns)) for ns in sorted(namespaces)],
        priority_classes=pcs.values(), now=now.timestamp())
    return state


def figures_json(value: Resource | None) -> dict[str, Any] | None:
    """A queue figure in stored units (None stays None)."""
    return value.to_canonical() if value is not None else None

"""Snapshot types of one scheduling session (Volcano's `pkg/scheduler/api`).

Tasks, jobs (PodGroups), queues and nodes with their resource accounting. A session works on
these objects in place, so build a fresh snapshot for every session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from scheduler_core.job_log import ChangeLog, JobTable
from scheduler_core.resources import Resource, exceeded_part


class TaskStatus(StrEnum):
    """Pod status as the scheduler sees it (Volcano's TaskStatus)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
OCCUPYING_STATUSES = ALLOCATED_STATUSES | {TaskStatus.RELEASING}
TERMINAL_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
# Volcano's ReadyTaskNum statuses (JobInfo keeps their count current).
READY_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED,
                            TaskStatus.SUCCEEDED})
# Statuses that can still count toward the gang (Volcano's ValidTaskNum).
VALID_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}


class JobPhase(StrEnum):
    """PodGroup phase."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(StrEnum):
    """Queue state; only Open queues accept new work."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"


def pod_request(containers: list[Resource], init_containers: list[Resource] | None = None) -> Resource:
    """Kubernetes pod request rule: `max(sum(containers), max(init containers))` per dimension."""
    total = Resource.empty()
    for c in containers:
        total.add(c)
    for c in init_containers or ():
        total.set_max_resource(c)
    return total


# Identical tasks share their decoded spec objects (loaders decode each distinct spec once): the
# text of a big one is kept per object, so 1,000 replicas of a 28 KB affinity are encoded once.
# Each entry holds its object (its id cannot be reused meanwhile); bounded by total text size.
_CANON_MIN = 512
_CANON_MAX_CHARS = 16_000_000
_canon_memo: dict[int, tuple[Any, str]] = {}
_canon_chars = [0]


def _canon(value: Any) -> str:
    """Stable text form of a JSON-like value, for equivalence keys."""
    hit = _canon_memo.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    if len(text) >= _CANON_MIN:
        if _canon_chars[0] + len(text) > _CANON_MAX_CHARS:
            _canon_memo.clear()
            _canon_chars[0] = 0
        _canon_memo[id(value)] = (value, text)
        _canon_chars[0] += len(text)
    return text


@dataclass(eq=False, slots=True)
class TaskInfo:
    """One pod. `uid` is "namespace/name"; `resreq` already follows the pod request rule."""

    uid: str
    name: str
    namespace: str
    job_uid: str
    resreq: Resource
    status: TaskStatus = TaskStatus.PENDING
    node_name: str | None = None
    role: str = ""
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    preemptable: bool = True
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict] = field(default_factory=list)
    affinity: dict | None = None
    labels: dict[str, str] = field(default_factory=dict)
    created: float = 0.0
    duration: float | None = None
    topology_spread_constraints: list[dict] = field(default_factory=list)
    nominated_node: str | None = None
    # When the task started running (unix seconds; None = not started or not known). With
    # `duration` it gives the task's expected end (scheduler_core.forecast).
    started: float | None = None
    _key: tuple | None = field(default=None, repr=False)
    _best_effort: bool | None = field(default=None, repr=False)
    # framework.isolation.screen found this task well-formed: a snapshot kept between cycles
    # re-checks only tasks that are new or changed (a changed row is a new TaskInfo).
    _screened: bool = field(default=False, repr=False)

    @property
    def best_effort(self) -> bool:
        """A task with an empty request; only backfill places it (computed once)."""
        if self._best_effort is None:
            self._best_effort = self.resreq.is_empty()
        return self._best_effort

    @property
    def sched_key(self) -> tuple:
        """Equivalence key: tasks with equal keys schedule identically (computed once)."""
        if self._key is None:
            self._key = (
                tuple(sorted(self.resreq.to_canonical().items())),
                tuple(sorted(self.node_selector.items())),
                _canon(self.tolerations) if self.tolerations else "",
                _canon(self.affinity) if self.affinity else "",
                _canon(self.topology_spread_constraints) if self.topology_spread_constraints else "",
                tuple(sorted(self.labels.items())),
                self.priority,
            )
        return self._key


@dataclass(eq=False, slots=True)
class JobInfo:
    """A PodGroup with its tasks; keeps per-status indexes and resource sums current."""

    # The change log of the snapshot's job table holding it (scheduler_core.job_log): first, so
    # __init__ sets it before the watched fields' setters read it.
    _log: ChangeLog | None = field(default=None, kw_only=True, repr=False)
    uid: str
    name: str
    namespace: str
    queue: str
    min_available: int = 1
    task_min_available: dict[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    priority: int = 0
    priority_class: str = ""
    phase: JobPhase = JobPhase.PENDING
    preemptable: bool = True
    created: float = 0.0
    sla_waiting_time: float | None = None
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resource = field(default_factory=Resource.empty)
    total_request: Resource = field(default_factory=Resource.empty)
    # Pending best-effort tasks, kept current by _index/_unindex (gang checks ask it often).
    _pending_be: int = field(default=0, repr=False)
    # Tasks in READY_STATUSES, kept current by _index/_unindex (gang and order plugins ask often).
    _ready: int = field(default=0, repr=False)
    _valid: int = field(default=0, repr=False)  # tasks in VALID_STATUSES, kept the same way
    # Bumped by every change to the task indexes and sums: state kept across sessions
    # (framework.kept) compares it to know whether the job's task figures moved.
    revision: int = field(default=0, repr=False)

    # -- task bookkeeping ------------------------------------------------------------------
    def _index(self, task: TaskInfo) -> None:
        self.revision += 1
        if self._log is not None:
            self._log.changed.add(self.uid)
        self.task_status_index.setdefault(task.status, {})[task.uid] = task
        if task.status is TaskStatus.PENDING and task.best_effort:
            self._pending_be += 1
        if task.status in READY_STATUSES:
            self._ready += 1
        if task.status in VALID_STATUSES:
            self._valid += 1
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)
        if task.status not in TERMINAL_STATUSES:
            self.total_request.add(task.resreq)

    def _unindex(self, task: TaskInfo) -> None:
        self.revision += 1
        if self._log is not None:
            self._log.changed.add(self.uid)
        bucket = self.task_status_index.get(task.status)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.task_status_index[task.status]
        if task.status is TaskStatus.PENDING and task.best_effort:
            self._pending_be -= 1
        if task.status in READY_STATUSES:
            self._ready -= 1
        if task.status in VALID_STATUSES:
            self._valid -= 1
        if task.status in ALLOCATED_STATUSES:
            self.allocated.sub_without_assert(task.resreq)
        if task.status not in TERMINAL_STATUSES:
            self.total_request.sub_without_assert(task.resreq)

    def add_task(self, task: TaskInfo) -> None:
        """Add a task (its `job_uid` must be this job)."""
        self.tasks[task.uid] = task
        self._index(task)

    def delete_task(self, task: TaskInfo) -> None:
        """Remove a task and its contribution to the sums."""
        if self.tasks.pop(task.uid, None) is not None:
            self._unindex(task)

    def replace_task(self, old: TaskInfo, new: TaskInfo) -> None:
        """Swap a task for a newer version of itself (same uid), keeping its place in `tasks`
        (incremental loaders; `old` may already be gone from the job)."""
        if self.tasks.get(old.uid) is old:
            self._unindex(old)
        self.tasks[new.uid] = new
        self._index(new)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to another status, keeping the index and sums exact."""
        old = task.status
        if (old in TERMINAL_STATUSES) != (status in TERMINAL_STATUSES) or old is status:
            self._unindex(task)
            task.status = status
            self._index(task)
            return
        # Hot path (every placement): total_request is unchanged between non-terminal statuses.
        self.revision += 1
        if self._log is not None:
            self._log.changed.add(self.uid)
        idx = self.task_status_index
        bucket = idx.get(old)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del idx[old]
        if task.best_effort:
            self._pending_be += (status is TaskStatus.PENDING) - (old is TaskStatus.PENDING)
        self._ready += (status in READY_STATUSES) - (old in READY_STATUSES)
        self._valid += (status in VALID_STATUSES) - (old in VALID_STATUSES)
        was, now = old in ALLOCATED_STATUSES, status in ALLOCATED_STATUSES
        if was and not now:
            self.allocated.sub_without_assert(task.resreq)
        elif now and not was:
            self.allocated.add(task.resreq)
        task.status = status
        idx.setdefault(status, {})[task.uid] = task

    def count(self, *statuses: TaskStatus) -> int:
        """Number of tasks in any of the given statuses."""
        idx = self.task_status_index
        n = 0
        for s in statuses:
            bucket = idx.get(s)
            if bucket:
                n += len(bucket)
        return n

    def tasks_in(self, *statuses: TaskStatus) -> list[TaskInfo]:
        """Tasks in any of the given statuses (index order)."""
        out: list[TaskInfo] = []
        for s in statuses:
            out.extend(self.task_status_index.get(s, {}).values())
        return out

    # -- gang figures (Volcano names) ------------------------------------------------------
    def ready_task_num(self) -> int:
        """Bound + Binding + Running + Allocated + Succeeded (Volcano's ReadyTaskNum)."""
        return self._ready

    def waiting_task_num(self) -> int:
        """Pipelined tasks."""
        return self.count(TaskStatus.PIPELINED)

    def valid_task_num(self) -> int:
        """Tasks that can still count toward the gang: allocated statuses, Succeeded, Pipelined, Pending."""
        return self._valid

    def pending_tasks(self) -> list[TaskInfo]:
        """Pending tasks (unordered; actions sort them with the session's task order)."""
        return list(self.task_status_index.get(TaskStatus.PENDING, {}).values())

    def pending_best_effort_task_num(self) -> int:
        """Pending tasks with an empty request (they count as ready for the gang)."""
        return self._pending_be

    def is_ready(self) -> bool:
        """Volcano's IsReady: ready + pending best-effort >= min_available."""
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        """Volcano's IsPipelined: waiting + ready + pending best-effort >= min_available."""
        return (self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
                >= self.min_available)

    def is_starving(self) -> bool:
        """Volcano's IsStarving: waiting + ready < min_available."""
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    @property
    def task_min_available_total(self) -> int:
        """Sum of the per-role minimums."""
        return sum(self.task_min_available.values())

    def _role_counts(self, statuses: frozenset[TaskStatus] | set[TaskStatus],
                     pending_best_effort: bool) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, tasks in self.task_status_index.items():
            if status in statuses:
                for t in tasks.values():
                    counts[t.role] = counts.get(t.role, 0) + 1
            elif pending_best_effort and status is TaskStatus.PENDING:
                for t in tasks.values():
                    if t.best_effort:
                        counts[t.role] = counts.get(t.role, 0) + 1
        return counts

    def _roles_meet(self, counts: dict[str, int]) -> bool:
        return all(counts.get(role, 0) >= n for role, n in self.task_min_available.items() if n > 0)

    def check_task_valid(self) -> bool:
        """Every role can still reach its minimum (CheckTaskValid); skipped when roles exceed the gang."""
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        statuses = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}
        return self._roles_meet(self._role_counts(statuses, False))

    def check_task_ready(self) -> bool:
        """Every role has its minimum ready (CheckTaskReady)."""
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        return self._roles_meet(self._role_counts(ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}, True))

    def check_task_pipelined(self) -> bool:
        """Every role has its minimum ready or pipelined (CheckTaskPipelined)."""
        if not self.task_min_available or self.min_available < self.task_min_available_total:
            return True
        statuses = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}
        return self._roles_meet(self._role_counts(statuses, True))

    def check_task_starving(self) -> bool:
        """Some role is below its minimum counting ready and pipelined tasks (CheckTaskStarving)."""
        if not self.task_min_available:
            return False
        if self.min_available < self.task_min_available_total:
            return True
        statuses = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}
        return not self._roles_meet(self._role_counts(statuses, False))

    def check_task_min_available(self) -> bool:
        """Alias of check_task_ready (per-role minimums are met by ready tasks)."""
        return self.check_task_ready()

    # -- resources -------------------------------------------------------------------------
    def get_min_resources(self) -> Resource:
        """min_resources, or an empty resource when unset."""
        return self.min_resources.clone() if self.min_resources is not None else Resource.empty()

    def deducted_min_resources(self) -> Resource:
        """min_resources that enqueue reserves (no scheduling gates here, so all of it)."""
        return self.get_min_resources()

    def elastic_resources(self) -> Resource:
        """Allocated resources above min_resources, per dimension, never negative."""
        return exceeded_part(self.allocated, self.get_min_resources())


# Job fields that kept figures read: assigning one notes the job in its table's change log.
WATCHED = ("queue", "phase", "min_available", "min_resources")


def _watch(cls: type, name: str) -> None:
    slot = cls.__dict__[name]
    get, put = slot.__get__, slot.__set__

    def fset(self: JobInfo, value: Any) -> None:
        log = self._log
        if log is not None:  # (None throughout __init__: the slot may be unset yet)
            old = get(self)
            # Same value, same object: nothing a kept figure reads moved (close re-assigns phases).
            if old is not value and (isinstance(value, Resource) or old != value):
                log.changed.add(self.uid)
        put(self, value)

    setattr(cls, name, property(slot.__get__, fset, doc=f"JobInfo.{name} (assignments logged)"))


for _name in WATCHED:
    _watch(JobInfo, _name)


@dataclass(eq=False, slots=True)
class QueueInfo:
    """A queue; `name` is also its uid. Top-level queues have parent "root" (or None)."""

    name: str
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    weight: int = 1
    priority: int = 0
    state: QueueState = QueueState.OPEN
    reclaimable: bool = True
    capability: Resource | None = None
    deserved: Resource | None = None
    guarantee: Resource | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    created: float = 0.0

    @property
    def uid(self) -> str:
        """Same as the name."""
        return self.name

    @property
    def is_leaf(self) -> bool:
        """A queue without children (jobs sit in leaves under hierarchy)."""
        return not self.children


@dataclass(eq=False, slots=True)
class NodeInfo:
    """A node with Volcano's accounting (docs/semantics.md section 2): see add_task/remove_task."""

    name: str
    allocatable: Resource
    idle: Resource = field(default_factory=Resource.empty)
    used: Resource = field(default_factory=Resource.empty)
    releasing: Resource = field(default_factory=Resource.empty)
    pipelined: Resource = field(default_factory=Resource.empty)
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict] = field(default_factory=list)
    unschedulable: bool = False
    usage: dict[str, float] | None = None
    usage_time: float | None = None
    tasks: dict[str, TaskInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A fresh node is fully idle; callers never pass idle themselves.
        if not self.tasks and self.idle.is_empty():
            self.idle = self.allocatable.clone()

    def future_idle(self) -> Resource:
        """idle + releasing - pipelined: what the node will have once victims are gone."""
        return self.idle.clone().add(self.releasing).sub_without_assert(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        """Account a task placed on this node (docs/semantics.md section 2); terminal and pending tasks
        are ignored.

        Running/Binding/Bound/Allocated: idle -= req, used += req. Releasing: the same and
        releasing += req. Pipelined: pipelined += req only (does not occupy idle).
        """
        st = task.status
        if st is TaskStatus.PIPELINED:
            self.pipelined.add(task.resreq)
        elif st in OCCUPYING_STATUSES:
            # Volcano lets idle go negative here instead of failing (allocateIdleResource).
            self.idle.sub_without_assert(task.resreq)
            self.used.add(task.resreq)
            if st is TaskStatus.RELEASING:
                self.releasing.add(task.resreq)
        else:
            return
        self.tasks[task.uid] = task

    def remove_task(self, task: TaskInfo) -> None:
        """Undo add_task for the task's current status."""
        if self.tasks.pop(task.uid, None) is None:
            return
        st = task.status
        if st is TaskStatus.PIPELINED:
            self.pipelined.sub_without_assert(task.resreq)
        elif st in OCCUPYING_STATUSES:
            self.idle.add(task.resreq)
            self.used.sub_without_assert(task.resreq)
            if st is TaskStatus.RELEASING:
                self.releasing.sub_without_assert(task.resreq)

    def update_task(self, task: TaskInfo, status: TaskStatus) -> None:
        """Change a placed task's status: remove with the old status, add with the new one."""
        self.remove_task(task)
        task.status = status
        self.add_task(task)


@dataclass(eq=False, slots=True)
class NamespaceInfo:
    """A namespace with an optional resource quota (resourcequota plugin)."""

    name: str
    quota: Resource | None = None
    used: Resource = field(default_factory=Resource.empty)


@dataclass(eq=False, slots=True)
class PriorityClassInfo:
    """A priority class: value and default preemption policy."""

    name: str
    value: int = 0
    preemption_policy: str = "PreemptLowerPriority"


@dataclass(eq=False)
class ClusterSnapshot:
    """Everything one session sees. Build it with `ClusterSnapshot.build(...)`."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    # Always a JobTable (scheduler_core.job_log): a plain dict assigned is wrapped in a new one.
    jobs: dict[str, JobInfo] = field(default_factory=JobTable)
    namespaces: dict[str, NamespaceInfo] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassInfo] = field(default_factory=dict)
    now: float = 0.0
    # Jobs taken out of the session (framework.isolation): uid -> JobError.
    set_aside: dict[str, Any] = field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "jobs" and not isinstance(value, JobTable):
            value = JobTable(value)  # a new log: its readers walk everything once
        object.__setattr__(self, name, value)

    @classmethod
    def build(cls, nodes: Iterable[NodeInfo] = (), queues: Iterable[QueueInfo] = (),
              jobs: Iterable[JobInfo] = (), tasks: Iterable[TaskInfo] = (),
              namespaces: Iterable[NamespaceInfo] = (), priority_classes: Iterable[PriorityClassInfo] = (),
              now: float = 0.0) -> ClusterSnapshot:
        """Wire a snapshot: tasks onto their jobs and nodes, queue children, implicit "root".

        `tasks` are extra tasks added to their `job_uid`; tasks already inside `job.tasks` are
        re-indexed. A task on an unknown node raises ValueError.
        """
        snap = cls(now=now)
        for n in sorted(nodes, key=lambda n: n.name):
            snap.nodes[n.name] = n
        for q in queues:
            snap.queues[q.name] = q
        if "root" not in snap.queues:
            snap.queues["root"] = QueueInfo(name="root", parent=None)
        for q in snap.queues.values():
            q.children = []
        for q in sorted(snap.queues.values(), key=lambda q: q.name):
            if q.name == "root":
                q.parent = None
                continue
            if q.parent is None:
                q.parent = "root"
            parent = snap.queues.get(q.parent)
            if parent is None:
                raise ValueError(f"queue {q.name}: unknown parent {q.parent}")
            parent.children.append(q.name)
        for ns in namespaces:
            snap.namespaces[ns.name] = ns
        for pc in priority_classes:
            snap.priority_classes[pc.name] = pc
        for j in jobs:
            existing = list(j.tasks.values())
            j.tasks, j.task_status_index = {}, {}
            j.allocated, j.total_request = Resource.empty(), Resource.empty()
            j._pending_be = j._ready = j._valid = 0
            snap.jobs[j.uid] = j
            for t in existing:
                snap.add_task(t)
        for t in tasks:
            snap.add_task(t)
        return snap

    def add_task(self, task: TaskInfo) -> None:
        """Add a task to its job and, when it holds a node, to that node's accounting."""
        job = self.jobs.get(task.job_uid)
        if job is None:
            raise ValueError(f"task {task.uid}: unknown job {task.job_uid}")
        job.add_task(task)
        if task.node_name is not None and (
                task.status in OCCUPYING_STATUSES or task.status is TaskStatus.PIPELINED):
            node = self.nodes.get(task.node_name)
            if node is None:
                raise ValueError(f"task {task.uid}: unknown node {task.node_name}")
            node.add_task(task)

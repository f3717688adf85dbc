"""Reads the `nodes:`, `queues:` and `jobs:` sections of a scenario into snapshot objects.

Checks every reference (task -> node, job -> queue, queue -> parent, priority classes), unique
names and the queue tree (no cycles); the defaults are listed in `scheduler_core.scenario`.
"""

from __future__ import annotations

from typing import Any

from scheduler_core import shapes
from scheduler_core.model import (
    OCCUPYING_STATUSES,
    JobInfo,
    JobPhase,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    QueueState,
    TaskInfo,
    TaskStatus,
)
from scheduler_core.resources import Resource
from scheduler_core.scenario_fields import DEFAULT_EPOCH, Ctx, Obj, Path, label_text

NODE_KEYS = ("name", "allocatable", "labels", "taints", "unschedulable", "usage")
QUEUE_KEYS = ("name", "parent", "weight", "priority", "state", "reclaimable", "annotations",
              "capability", "deserved", "guarantee")
JOB_KEYS = ("name", "namespace", "queue", "min_member", "min_task_member", "min_resources", "phase",
            "priority_class", "preemptable", "created", "sla_waiting_time", "tasks", "scheduler_name")
TASK_KEYS = ("name", "role", "request", "status", "node", "priority_class", "priority",
             "preemption_policy", "preemptable", "labels", "node_selector", "tolerations", "affinity",
             "topology_spread_constraints", "nominated_node", "duration", "started")
TAINT_KEYS = ("key", "value", "effect")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_MAX_PODS = 110
# Statuses that only make sense for a task placed on a node.
NEEDS_NODE = OCCUPYING_STATUSES | {TaskStatus.PIPELINED}


class ClusterReader:
    """Reads nodes, then queues, then jobs (jobs refer to both)."""

    def __init__(self, ctx: Ctx, top: Obj, priority_classes: dict[str, PriorityClassInfo]) -> None:
        self.ctx, self.top, self.priority_classes = ctx, top, priority_classes
        self.node_names: set[str] = set()
        self.queue_names: set[str] = set()
        # Job uid -> the scheduler it names (`scheduler_name`, only the jobs that set one).
        self.job_schedulers: dict[str, str] = {}

    # -- nodes -------------------------------------------------------------------------------
    def nodes(self) -> list[NodeInfo]:
        """Every node; names must be unique."""
        out: list[NodeInfo] = []
        for path, item in self.top.items("nodes"):
            o = Obj(self.ctx, item, path, NODE_KEYS, required=("name", "allocatable"))
            name = o.text("name")
            if name in self.node_names:
                raise o.err("name", f"duplicate node {name!r}")
            self.node_names.add(name)
            quantities = dict(o.mapping("allocatable") or {})
            o.quantities("allocatable")  # validates every quantity with its line
            quantities.setdefault("pods", DEFAULT_MAX_PODS)
            usage = None
            if o.has("usage"):
                u = Obj(self.ctx, o.data["usage"], (*path, "usage"), ("cpu", "memory"))
                usage = {k: v for k in ("cpu", "memory") if (v := u.number(k)) is not None}
            labels = self.ctx.shape(shapes.check_labels, o.labels("labels"), (*path, "labels"))
            out.append(NodeInfo(
                name=name, allocatable=Resource.from_quantities(quantities), labels=labels,
                taints=[self._taint(p, t) for p, t in o.items("taints")],
                unschedulable=o.flag("unschedulable", False), usage=usage))
        return out

    def _taint(self, path: Path, item: Any) -> dict[str, str]:
        o = Obj(self.ctx, item, path, TAINT_KEYS, required=("key", "effect"))
        taint = {"key": o.text("key"), "value": self._text(o, "value"), "effect": o.choice(
            "effect", TAINT_EFFECTS, None)}
        self.ctx.shape(shapes.check_label_key, taint["key"], (*path, "key"))
        self.ctx.shape(shapes.check_label_value, taint["value"], (*path, "value"))
        return taint

    def _text(self, o: Obj, key: str) -> str:
        value = o.data.get(key)
        if value is None:
            return ""
        text = label_text(value)
        if text is None:
            raise o.err(key, f"expected a string, got {value!r}")
        return text

    # -- queues ------------------------------------------------------------------------------
    def queues(self) -> list[QueueInfo]:
        """Every queue; parents must exist (root is implicit) and form a tree."""
        out: list[QueueInfo] = []
        paths: dict[str, Path] = {}
        for path, item in self.top.items("queues"):
            o = Obj(self.ctx, item, path, QUEUE_KEYS, required=("name",))
            name = o.text("name")
            if name in paths:
                raise o.err("name", f"duplicate queue {name!r}")
            paths[name] = path
            parent = o.text("parent")
            if name == "root" and parent is not None:
                raise o.err("parent", "the root queue has no parent")
            out.append(QueueInfo(
                name=name, parent=None if name == "root" else (parent or "root"),
                weight=o.integer("weight", 1, minimum=1), priority=o.integer("priority", 0),
                state=o.enum("state", QueueState, QueueState.OPEN),
                reclaimable=o.flag("reclaimable", True),
                capability=o.resource("capability"), deserved=o.resource("deserved"),
                guarantee=o.resource("guarantee"), annotations=dict(o.mapping("annotations") or {})))
        self.queue_names = set(paths) | {"root"}
        parents = {q.name: q.parent for q in out}
        for q in out:
            if q.parent is not None and q.parent not in self.queue_names:
                raise self.ctx.error((*paths[q.name], "parent"), f"unknown parent queue {q.parent!r}")
        for q in out:  # walk up from every queue; meeting the start again is a cycle
            seen = [q.name]
            cur = parents.get(q.name)
            while cur is not None and cur != "root":
                if cur == q.name:
                    chain = " -> ".join([*seen, cur])
                    raise self.ctx.error((*paths[q.name], "parent"), f"queue cycle: {chain}")
                if cur in seen:
                    break  # a cycle that q only leads into; reported from its own members
                seen.append(cur)
                cur = parents.get(cur)
        return out

    # -- jobs and tasks ----------------------------------------------------------------------
    def jobs(self) -> list[JobInfo]:
        """Every job with its tasks; job and task keys (namespace/name) must be unique."""
        out: list[JobInfo] = []
        job_uids: set[str] = set()
        task_uids: set[str] = set()
        for path, item in self.top.items("jobs"):
            o = Obj(self.ctx, item, path, JOB_KEYS, required=("name",))
            name = o.text("name")
            namespace = o.text("namespace", "default")
            uid = f"{namespace}/{name}"
            if uid in job_uids:
                raise o.err("name", f"duplicate job {uid!r}")
            job_uids.add(uid)
            queue = o.text("queue", "default")
            if queue not in self.queue_names:
                raise self.ctx.error((*path, "queue"), f"unknown queue {queue!r}",
                                     line_path=(*path, "queue") if o.has("queue") else path)
            pc = self._priority_class(o, "priority_class")
            if o.has("scheduler_name"):
                scheduler = o.text("scheduler_name")
                if not scheduler:
                    raise o.err("scheduler_name", "expected a non-empty scheduler name")
                self.job_schedulers[uid] = scheduler
            task_min: dict[str, int] = {}
            for role, n in (o.mapping("min_task_member") or {}).items():
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise self.ctx.error((*path, "min_task_member", role),
                                         f"expected a non-negative integer, got {n!r}")
                task_min[str(role)] = n
            created = o.time("created")
            job = JobInfo(
                uid=uid, name=name, namespace=namespace, queue=queue,
                min_available=o.integer("min_member", 1, minimum=0), task_min_available=task_min,
                min_resources=o.resource("min_resources"), priority=pc.value if pc else 0,
                priority_class=pc.name if pc else "", phase=o.enum("phase", JobPhase, JobPhase.PENDING),
                preemptable=o.flag("preemptable", True),
                created=created if created is not None else DEFAULT_EPOCH,
                sla_waiting_time=o.duration("sla_waiting_time"))
            for tpath, titem in o.items("tasks"):
                task = self._task(tpath, titem, job, pc)
                if task.uid in task_uids:
                    raise self.ctx.error((*tpath, "name"), f"duplicate task {task.uid!r}")
                task_uids.add(task.uid)
                job.add_task(task)
            out.append(job)
        return out

    def _priority_class(self, o: Obj, key: str) -> PriorityClassInfo | None:
        name = o.text(key)
        if name is None:
            return None
        pc = self.priority_classes.get(name)
        if pc is None:
            raise o.err(key, f"unknown priority class {name!r}")
        return pc

    def _node_ref(self, o: Obj, key: str) -> str | None:
        name = o.text(key)
        if name is not None and name not in self.node_names:
            raise o.err(key, f"unknown node {name!r}")
        return name

    def _task(self, path: Path, item: Any, job: JobInfo, job_pc: PriorityClassInfo | None) -> TaskInfo:
        o = Obj(self.ctx, item, path, TASK_KEYS, required=("name",))
        name = o.text("name")
        node = self._node_ref(o, "node")
        status = o.enum("status", TaskStatus, TaskStatus.PENDING)
        if node is not None and status is TaskStatus.PENDING:
            status = TaskStatus.BOUND  # the format's rule: a Pending task with a node is Bound
        if node is None and status in NEEDS_NODE:
            raise o.err("status", f"a task in status {status.value} needs a node")
        pc = self._priority_class(o, "priority_class") or job_pc
        priority = o.integer("priority", pc.value if pc else 0)
        policy = o.choice("preemption_policy", PREEMPTION_POLICIES,
                          pc.preemption_policy if pc else "PreemptLowerPriority")
        request = o.resource("request")
        # Kubernetes shapes (scheduler_core.shapes, as the API checks them); errors name the element.
        affinity = self.ctx.shape(shapes.check_affinity, o.raw("affinity"), (*path, "affinity"))
        spread = self.ctx.shape(shapes.check_topology_spread_constraints,
                                o.raw("topology_spread_constraints"), (*path, "topology_spread_constraints"))
        tolerations = [self._toleration(p, t) for p, t in o.items("tolerations")]
        self.ctx.shape(shapes.check_tolerations, tolerations, (*path, "tolerations"))
        node_selector = self.ctx.shape(shapes.check_node_selector, o.labels("node_selector"),
                                       (*path, "node_selector"))
        labels = self.ctx.shape(shapes.check_labels, o.labels("labels"), (*path, "labels"))
        return TaskInfo(
            uid=f"{job.namespace}/{name}", name=name, namespace=job.namespace, job_uid=job.uid,
            resreq=request if request is not None else Resource.empty(), status=status,
            node_name=node, role=o.text("role", ""),
            priority=priority, preemption_policy=policy or "PreemptLowerPriority",
            preemptable=o.flag("preemptable", job.preemptable),
            node_selector=node_selector, tolerations=tolerations,
            affinity=dict(affinity) if affinity is not None else None, labels=labels,
            created=job.created, topology_spread_constraints=list(spread),
            nominated_node=self._node_ref(o, "nominated_node"),
            duration=o.duration("duration"), started=o.time("started"))

    def _toleration(self, path: Path, item: Any) -> dict[str, Any]:
        o = Obj(self.ctx, item, path, TOLERATION_KEYS)
        out: dict[str, Any] = {"operator": o.choice("operator", TOLERATION_OPERATORS, "Equal")}
        if o.has("key"):
            out["key"] = o.text("key")
        if o.has("value"):
            out["value"] = self._text(o, "value")
        if o.has("effect"):
            out["effect"] = o.choice("effect", TAINT_EFFECTS, None)
        if o.has("tolerationSeconds"):
            out["tolerationSeconds"] = o.integer("tolerationSeconds", 0)
        return out

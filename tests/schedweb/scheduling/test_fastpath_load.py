"""The raw-SQL load (adapter.load_state over snapshot_sql) equals a plain ORM load of the same rows.

The reference below reads every table through model instances and converts in Python (datetimes
by `.timestamp()`): the fast path must build exactly the same snapshot and row identities.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q

from scheduler_core.model import (
    OCCUPYING_STATUSES,
    ClusterSnapshot,
    JobInfo,
    NamespaceInfo,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    QueueState,
    TaskInfo,
)
from scheduler_core.model import JobPhase as CorePhase
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
)
from schedweb.scheduling.adapter import HOLDING_STATUSES, load_state

pytestmark = pytest.mark.django_db
SQLITE = connection.vendor == "sqlite"
T0 = datetime(2026, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


def _res(data: dict | None) -> Resource | None:
    return Resource.from_canonical(data) if data is not None else None


def reference_load(now: datetime) -> tuple[ClusterSnapshot, dict, dict, dict]:
    """The snapshot, task rows (id, status, updated), job rows and node ids, through the ORM."""
    pcs = {pc.id: PriorityClassInfo(name=pc.name, value=pc.value,
                                    preemption_policy=pc.preemption_policy)
           for pc in PriorityClass.objects.order_by("name")}
    queues = [QueueInfo(name=q.name, parent=q.parent.name if q.parent_id else None, weight=q.weight,
                        priority=q.priority, state=QueueState(q.state), reclaimable=q.reclaimable,
                        capability=_res(q.capability), deserved=_res(q.deserved),
                        guarantee=_res(q.guarantee), annotations=q.annotations or {},
                        created=q.created.timestamp())
              for q in Queue.objects.order_by("name")]
    nodes = []
    for n in Node.objects.order_by("name"):
        usage = None
        if n.usage_cpu is not None or n.usage_memory is not None:
            usage = {k: v for k, v in (("cpu", n.usage_cpu), ("memory", n.usage_memory)) if v is not None}
        nodes.append(NodeInfo(name=n.name, allocatable=Resource.from_canonical(n.allocatable or {}),
                              labels=n.labels or {}, taints=n.taints or [], unschedulable=n.unschedulable,
                              usage=usage,
                              usage_time=n.usage_updated.timestamp() if n.usage_updated else None))
    holding = Q(id__in=Task.objects.filter(status__in=HOLDING_STATUSES).values("job_id"))
    jobs, job_rows = {}, {}
    for j in Job.objects.filter(~Q(phase__in=TERMINAL_JOB_PHASES) | holding).order_by("created", "id"):
        pc = pcs.get(j.priority_class_id)
        phase = CorePhase(j.phase) if j.phase not in TERMINAL_JOB_PHASES else CorePhase.RUNNING
        jobs[j.id] = JobInfo(uid=j.uid, name=j.name, namespace=j.namespace, queue=j.queue.name,
                             min_available=j.min_member, task_min_available=j.min_task_member or {},
                             min_resources=_res(j.min_resources), priority=pc.value if pc else 0,
                             priority_class=pc.name if pc else "", phase=phase, preemptable=j.preemptable,
                             created=j.created.timestamp(), sla_waiting_time=j.sla_waiting_time)
        job_rows[j.uid] = (j.id, j.phase, j.reason_code, j.reason_message, j.reason_details or {},
                           j.reason_since)
    tasks, task_rows, used = [], {}, {}
    active = [p for p in Job._meta.get_field("phase").choices if p[0] not in TERMINAL_JOB_PHASES]
    task_filter = ((Q(job__phase__in=[p for p, _ in active]) & ~Q(status="Failed"))
                   | Q(status__in=HOLDING_STATUSES))
    for t in Task.objects.filter(task_filter).select_related("job", "node").order_by("job_id", "name"):
        job = jobs[t.job_id]
        status, node, nominated = CoreStatus(t.status), t.node.name if t.node_id else None, None
        if status is CoreStatus.PIPELINED:
            status, nominated, node = CoreStatus.PENDING, node, None
        elif status not in OCCUPYING_STATUSES:
            node = None
        tasks.append(TaskInfo(
            uid=f"{job.uid}/{t.name}", name=t.name, namespace=job.namespace, job_uid=job.uid,
            resreq=Resource.from_canonical(t.request or {}), status=status, node_name=node, role=t.role,
            priority=t.priority if t.priority is not None else job.priority,
            preemption_policy=t.preemption_policy, preemptable=t.preemptable,
            node_selector=t.node_selector or {}, tolerations=t.tolerations or [], affinity=t.affinity,
            labels=t.labels or {}, created=t.created.timestamp(), duration=t.duration,
            topology_spread_constraints=t.topology_spread_constraints or [],
            started=t.started.timestamp() if t.started else None, nominated_node=nominated))
        task_rows[tasks[-1].uid] = (t.id, t.status, t.updated)
        if status in OCCUPYING_STATUSES:
            used.setdefault(job.namespace, Resource.empty()).add(tasks[-1].resreq)
    quotas = dict(NamespaceQuota.objects.values_list("namespace", "hard"))
    names = sorted({j.namespace for j in jobs.values()} | set(quotas))
    snap = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs.values(), tasks=tasks,
        namespaces=[NamespaceInfo(name=ns, quota=_res(quotas.get(ns)), used=used.get(ns, Resource.empty()))
                    for ns in names],
        priority_classes=pcs.values(), now=now.timestamp())
    node_ids = dict(Node.objects.values_list("name", "id"))
    return snap, task_rows, job_rows, node_ids


def dump(value: Any, key: str = "") -> Any:
    """A comparable tree of plain values (slots and dataclass fields by name, types kept).

    SQLite computes job/task `created` by julianday() (about 10 microseconds of error): rounded
    to the millisecond there, exact on PostgreSQL.
    """
    if isinstance(value, Resource):
        return ("Resource", value.to_canonical(), value.max_task_num)
    slots = [n for c in type(value).__mro__ for n in getattr(c, "__slots__", ())]
    if slots or hasattr(value, "__dict__") and not isinstance(value, type):
        names = set(slots) | set(getattr(value, "__dict__", {}))
        return (type(value).__name__, {n: dump(getattr(value, n), n) for n in sorted(names)
                                       if not n.startswith("__") and hasattr(value, n)})
    if isinstance(value, dict):
        return [(k, dump(v, k)) for k, v in value.items()]  # order matters too
    if isinstance(value, list | tuple):
        return [dump(v, key) for v in value]
    if SQLITE and key in ("created", "started") and isinstance(value, float):
        return round(value, 3)
    return (type(value).__name__, value)


def _updated(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def make_rows() -> None:
    """Every kind of row the load reads, with non-default values where the load converts."""
    high = PriorityClass.objects.create(name="high", value=1000)
    PriorityClass.objects.create(name="low", value=10, preemption_policy="Never")
    dept = Queue.objects.create(name="dept", weight=2, capability={"cpu": 8000, "memory": 2**34})
    team = Queue.objects.create(name="team", parent=dept, deserved={"cpu": 4000, "memory": 2**33},
                                guarantee={"cpu": 1000, "memory": 2**30}, annotations={"a": "b"},
                                reclaimable=False, priority=3)
    Queue.objects.create(name="closed", state="Closed")
    n0 = Node.objects.create(name="n0", allocatable={"cpu": 8000, "memory": 2**34, "pods": 110},
                             labels={"zone": "a"},
                             taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
                             usage_cpu=50.0, usage_memory=25.5, usage_updated=T0)
    n1 = Node.objects.create(name="n1", allocatable={"cpu": 4000, "memory": 2**33, "pods": 110},
                             unschedulable=True)
    n2 = Node.objects.create(name="n2", allocatable={"cpu": 4000, "memory": 2**33, "nvidia.com/gpu": 2000},
                             usage_cpu=10.0)
    NamespaceQuota.objects.create(namespace="ns1", hard={"cpu": 4000})
    NamespaceQuota.objects.create(namespace="quota-only", hard={"memory": 2**30})

    def job(name: str, phase: str, ns: str = "ns1", **kw: Any) -> Job:
        return Job.objects.create(namespace=ns, name=name, queue=kw.pop("queue", team), phase=phase, **kw)

    def task(j: Job, name: str, status: str, node: Node | None = None, **kw: Any) -> None:
        Task.objects.create(job=j, name=name, status=status, node=node,
                            request=kw.pop("request", {"cpu": 1000, "memory": 2**30}), **kw)

    j1 = job("j1", "Pending", priority_class=high, min_member=2, min_task_member={"worker": 1},
             min_resources={"cpu": 2000, "memory": 2**31}, sla_waiting_time=30.0,
             reason_code="GangUnschedulable", reason_message="0/3 nodes",
             reason_details={"queue_chain": ["root", "dept", "team"]}, reason_since=T0)
    task(j1, "j1-b", "Pending", role="worker")
    task(j1, "j1-a", "Pending", role="worker")
    j2 = job("j2", "Running", preemptable=False)
    task(j2, "j2-run", "Running", n0, started=T0 + timedelta(seconds=3, microseconds=250_000),
         topology_spread_constraints=[{"maxSkew": 1, "topologyKey": "zone",
                                       "whenUnsatisfiable": "DoNotSchedule",
                                       "labelSelector": {"matchLabels": {"app": "x"}}}])
    task(j2, "j2-bind", "Binding", n1)
    task(j2, "j2-pipe", "Pipelined", n2)
    task(j2, "j2-done", "Succeeded", n0)
    task(j2, "j2-failed", "Failed", n0)
    j3 = job("j3", "Cancelled")
    task(j3, "j3-rel", "Releasing", n0)
    task(j3, "j3-gone", "Failed")
    j4 = job("j4", "Completed")
    task(j4, "j4-done", "Succeeded", n1)
    j5 = job("j5", "Inqueue", ns="ns2", priority_class=high)
    task(j5, "j5-0", "Pending", priority=5, affinity={"nodeAffinity": {"x": [1, 2]}},
         tolerations=[{"key": "k", "operator": "Exists"}], node_selector={"zone": "a"},
         labels={"app": "x"}, duration=12.5, role="ps", preemptable=False, preemption_policy="Never",
         request={"cpu": 500, "memory": 2**29, "nvidia.com/gpu": 1000})
    task(j5, "j5-1", "Pending", request={})
    # Distinct creation times with microseconds (the load reads them as Unix seconds).
    for i, model in enumerate((Queue, Job, Task)):
        for k, pk in enumerate(model.objects.order_by("id").values_list("id", flat=True)):
            model.objects.filter(pk=pk).update(created=T0 + timedelta(seconds=i * 100 + k,
                                                                      microseconds=123_457 * k % 1_000_000))


def test_fast_load_equals_orm_reference():
    make_rows()
    now = T0 + timedelta(hours=1)
    state = load_state(now)
    snap, task_rows, job_rows, node_ids = reference_load(now)
    assert dump(state.snapshot) == dump(snap)
    assert {uid: (pk, status, _updated(text))
            for uid, (pk, status, text, _) in state.tasks.items()} == task_rows
    # The fourth field is the task's job id (the write phase locks those jobs).
    loaded = Task.objects.select_related("job").filter(pk__in=[row[0] for row in state.tasks.values()])
    assert {uid: row[3] for uid, row in state.tasks.items()} == {
        f"{t.job.namespace}/{t.job.name}/{t.name}": t.job_id for t in loaded}
    assert {uid: (r.id, r.phase, r.reason_code, r.reason_message, r.reason_details, r.reason_since)
            for uid, r in state.jobs.items()} == job_rows
    assert state.node_ids == node_ids
    assert state.warnings == []


def test_fast_load_reads_the_expected_rows():
    make_rows()
    state = load_state(T0)
    snap = state.snapshot
    assert list(state.jobs) == ["ns1/j1", "ns1/j2", "ns1/j3", "ns2/j5"]  # by creation
    assert sorted(state.tasks) == ["ns1/j1/j1-a", "ns1/j1/j1-b", "ns1/j2/j2-bind", "ns1/j2/j2-done",
                                   "ns1/j2/j2-pipe", "ns1/j2/j2-run", "ns1/j3/j3-rel", "ns2/j5/j5-0",
                                   "ns2/j5/j5-1"]
    pipe = snap.jobs["ns1/j2"].tasks["ns1/j2/j2-pipe"]
    assert (pipe.status, pipe.node_name, pipe.nominated_node) == (CoreStatus.PENDING, None, "n2")
    assert snap.jobs["ns1/j3"].phase is CorePhase.RUNNING  # cancelled: only holds its Releasing task
    assert snap.jobs["ns1/j1"].min_resources.to_canonical() == {"cpu": 2000, "memory": 2**31}
    assert state.jobs["ns1/j1"].reason_since == T0
    assert snap.nodes["n0"].usage == {"cpu": 50.0, "memory": 25.5}
    assert snap.nodes["n0"].usage_time == T0.timestamp()
    assert snap.namespaces["ns1"].used.to_canonical() == {"cpu": 3000, "memory": 3 * 2**30}
    assert snap.namespaces["quota-only"].quota.to_canonical() == {"cpu": 0, "memory": 2**30}
    assert snap.queues["team"].parent == "dept" and snap.queues["team"].reclaimable is False
    j5 = snap.jobs["ns2/j5"].tasks["ns2/j5/j5-0"]
    assert (j5.priority, j5.role, j5.duration, j5.preemptable, j5.preemption_policy) == (5, "ps", 12.5,
                                                                                          False, "Never")
    assert snap.jobs["ns2/j5"].tasks["ns2/j5/j5-1"].priority == 1000  # from the priority class
    if not SQLITE:
        created = Task.objects.get(name="j1-a").created.timestamp()
        assert snap.jobs["ns1/j1"].tasks["ns1/j1/j1-a"].created == created  # date_part == Python, exactly

"""A deep copy of a ClusterSnapshot that sessions can change without touching the original.

Resources, tasks, jobs, nodes, queues and namespaces are new objects; the read-only spec values
(labels, selectors, tolerations, affinity) are shared, and equal label / selector / toleration
values are shared by all tasks that carry them (as the database loader does), so the session's
shape screen, which checks each distinct spec object once, stays cheap on copies.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.model import (
    ClusterSnapshot,
    JobInfo,
    NamespaceInfo,
    NodeInfo,
    PriorityClassInfo,
    QueueInfo,
    TaskInfo,
)


class _Interner:
    """One shared object per distinct flat mapping / list of flat mappings (empty ones included)."""

    def __init__(self) -> None:
        self.seen: dict[Any, Any] = {}
        self.empty_list: list = []

    def mapping(self, value: dict) -> dict:
        try:
            key: Any = ("m", tuple(sorted(value.items())))
            hash(key)
        except (TypeError, AttributeError):  # nested or unhashable values: keep the task's own object
            return value
        return self.seen.setdefault(key, value)

    def mappings(self, value: list) -> list:
        if isinstance(value, list) and not value:
            return self.empty_list
        try:
            key: Any = ("l", tuple(tuple(sorted(d.items())) for d in value))
            hash(key)
        except (TypeError, AttributeError):
            return value
        return self.seen.setdefault(key, value)

    def shared(self, value: Any) -> Any:
        """Empty lists become one shared empty list; anything else is kept."""
        return self.empty_list if isinstance(value, list) and not value else value


def share_specs(snap: ClusterSnapshot) -> None:
    """In place: tasks with equal labels / selectors / tolerations share one object of each.

    The session's shape screen checks each distinct combination of spec objects once per
    session, so a snapshot whose every task owns its spec objects is screened task by task.
    Spec values are only read (set-aside tasks get new objects), so sharing them is safe.
    """
    intern = _Interner()
    for job in snap.jobs.values():
        for t in job.tasks.values():
            t.node_selector = intern.mapping(t.node_selector)
            t.labels = intern.mapping(t.labels)
            t.tolerations = intern.mappings(t.tolerations)
            t.topology_spread_constraints = intern.shared(t.topology_spread_constraints)


def clone_task(t: TaskInfo, intern: _Interner | None = None) -> TaskInfo:
    """A copy of one task (same status and node; the copy is not on any job or node yet)."""
    intern = intern or _Interner()
    return TaskInfo(
        uid=t.uid, name=t.name, namespace=t.namespace, job_uid=t.job_uid, resreq=t.resreq.clone(),
        status=t.status, node_name=t.node_name, role=t.role, priority=t.priority,
        preemption_policy=t.preemption_policy, preemptable=t.preemptable,
        node_selector=intern.mapping(t.node_selector), tolerations=intern.mappings(t.tolerations),
        affinity=t.affinity, labels=intern.mapping(t.labels), created=t.created, duration=t.duration,
        topology_spread_constraints=intern.shared(t.topology_spread_constraints),
        nominated_node=t.nominated_node,
        started=t.started, _key=t._key, _best_effort=t._best_effort, _screened=t._screened)


def clone_job(j: JobInfo, intern: _Interner | None = None) -> JobInfo:
    """A copy of one job with copies of its tasks (indexes rebuilt by ClusterSnapshot.build)."""
    intern = intern or _Interner()
    job = JobInfo(
        uid=j.uid, name=j.name, namespace=j.namespace, queue=j.queue, min_available=j.min_available,
        task_min_available=dict(j.task_min_available),
        min_resources=j.min_resources.clone() if j.min_resources is not None else None,
        priority=j.priority, priority_class=j.priority_class, phase=j.phase, preemptable=j.preemptable,
        created=j.created, sla_waiting_time=j.sla_waiting_time)
    job.tasks = {uid: clone_task(t, intern) for uid, t in j.tasks.items()}
    return job


def _opt(r: Any) -> Any:
    return r.clone() if r is not None else None


def clone_snapshot(snap: ClusterSnapshot) -> ClusterSnapshot:
    """An independent copy: same nodes, queues, jobs, tasks, statuses and accounting."""
    intern = _Interner()
    nodes = [NodeInfo(name=n.name, allocatable=n.allocatable.clone(), labels=n.labels, taints=n.taints,
                      unschedulable=n.unschedulable, usage=n.usage, usage_time=n.usage_time)
             for n in snap.nodes.values()]
    queues = [QueueInfo(name=q.name, parent=q.parent, weight=q.weight, priority=q.priority, state=q.state,
                        reclaimable=q.reclaimable, capability=_opt(q.capability), deserved=_opt(q.deserved),
                        guarantee=_opt(q.guarantee), annotations=q.annotations, created=q.created)
              for q in snap.queues.values()]
    jobs = [clone_job(j, intern) for j in snap.jobs.values()]
    out = ClusterSnapshot.build(
        nodes=nodes, queues=queues, jobs=jobs,
        namespaces=[NamespaceInfo(name=ns.name, quota=_opt(ns.quota), used=ns.used.clone())
                    for ns in snap.namespaces.values()],
        priority_classes=[PriorityClassInfo(pc.name, pc.value, pc.preemption_policy)
                          for pc in snap.priority_classes.values()],
        now=snap.now)
    # build() files queues by name and sorts children; keep the original's order of children.
    for q in snap.queues.values():
        if q.name in out.queues:
            out.queues[q.name].children = list(q.children)
    out.set_aside = dict(snap.set_aside)
    return out

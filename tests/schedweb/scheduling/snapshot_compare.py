"""A plain-data picture of a loaded snapshot, to compare an incremental load with a full one."""

from __future__ import annotations

from typing import Any

from scheduler_core.model import TaskStatus
from scheduler_core.resources import Resource
from schedweb.scheduling.adapter import LoadedState


def _r(value: Resource | None) -> Any:
    return None if value is None else tuple(sorted(value.to_canonical().items()))


def picture(state: LoadedState) -> dict[str, Any]:
    """Nodes' accounting, tasks, jobs' phases and sums, queues, namespaces, and the identities
    the write phase uses; dict orders the scheduler may see are kept as lists."""
    snap = state.snapshot
    nodes = {name: (_r(n.allocatable), _r(n.idle), _r(n.used), _r(n.releasing), _r(n.pipelined),
                    n.labels, n.taints, n.unschedulable, n.usage, n.usage_time, sorted(n.tasks))
             for name, n in snap.nodes.items()}
    tasks, jobs = {}, {}
    for uid, job in snap.jobs.items():
        counts = {str(s): len(b) for s, b in job.task_status_index.items() if b}
        jobs[uid] = (job.queue, job.min_available, job.task_min_available, _r(job.min_resources),
                     job.priority, job.priority_class, str(job.phase), job.preemptable, job.created,
                     job.sla_waiting_time,
                     _r(job.allocated), _r(job.total_request), counts, job.ready_task_num(),
                     job.valid_task_num(), job.pending_best_effort_task_num())
        for tuid, t in job.tasks.items():
            assert t.uid == tuid and t.job_uid == uid
            tasks[tuid] = (str(t.status), t.node_name, t.nominated_node, _r(t.resreq), t.role, t.priority,
                           t.preemption_policy, t.preemptable, t.node_selector, t.tolerations, t.affinity,
                           t.labels, t.created, t.duration, t.topology_spread_constraints, t.started)
            assert t.status in job.task_status_index and job.task_status_index[t.status][tuid] is t
            if t.node_name is not None and t.status not in (TaskStatus.PENDING, TaskStatus.SUCCEEDED,
                                                            TaskStatus.FAILED):
                assert snap.nodes[t.node_name].tasks[tuid] is t
    queues = {name: (q.parent, sorted(q.children), q.weight, q.priority, str(q.state), q.reclaimable,
                     _r(q.capability), _r(q.deserved), _r(q.guarantee), q.annotations, q.created)
              for name, q in snap.queues.items()}
    spaces = {name: (_r(ns.quota), _r(ns.used)) for name, ns in snap.namespaces.items()}
    return {
        "node_order": list(snap.nodes), "nodes": nodes, "tasks": tasks, "job_order": list(snap.jobs),
        "jobs": jobs, "queues": queues, "namespace_order": list(snap.namespaces), "namespaces": spaces,
        "priority_classes": {n: (p.value, p.preemption_policy) for n, p in snap.priority_classes.items()},
        "set_aside": dict(snap.set_aside),
        "task_rows": dict(state.tasks), "job_rows": {u: (r.id, r.phase, r.reason_code, r.reason_message,
                                                         r.reason_details, r.reason_since, r.scheduler_name)
                                                     for u, r in state.jobs.items()},
        "node_ids": dict(state.node_ids), "pipelined": sorted(state.pipelined),
    }


def differences(left: dict[str, Any], right: dict[str, Any], limit: int = 8) -> list[str]:
    """The first differing entries between two pictures (empty when equal)."""
    out = []
    for key in left:
        a, b = left[key], right[key]
        if a == b:
            continue
        if isinstance(a, dict):
            for k in sorted(set(a) | set(b), key=str):
                if a.get(k) != b.get(k):
                    out.append(f"{key}[{k}]: incremental {a.get(k)!r} != full {b.get(k)!r}")
                    if len(out) >= limit:
                        return out
        else:
            out.append(f"{key}: incremental {a!r} != full {b!r}")
    return out

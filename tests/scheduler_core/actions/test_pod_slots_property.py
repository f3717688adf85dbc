"""Property: with or without the predicates plugin, no action fills a node past its pod limit.

Small random clusters: 2-3 nodes with 2-4 pod slots and plenty of cpu, two queues, running jobs
within the limits (some best-effort tasks), waiting jobs of 1-cpu or best-effort tasks; every
action in one session (allocate, preempt, reclaim, backfill), normal or topology-aware preempt.
After the session no node holds more staying tasks (all but Releasing) than its slots, and no
more tasks occupying idle (all but Pipelined) either.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task

TIERS = {
    "plain": [["priority", "gang"], ["proportion"]],
    "predicates": [["priority", "gang"], ["predicates", "proportion", "nodeorder"]],
}
# (queue, tasks, best-effort?, priority)
running_job = st.tuples(st.sampled_from(["qa", "qb"]), st.integers(1, 3), st.booleans(), st.integers(0, 5))
waiting_job = st.tuples(st.sampled_from(["qa", "qb"]), st.integers(1, 3), st.booleans(), st.integers(0, 50))


def _tasks(prefix: str, n: int, best_effort: bool, **kw):
    cpu, mem = (None, None) if best_effort else ("1", "1Gi")
    return [task(f"{prefix}-{i}", cpu=cpu, memory=mem, **kw) for i in range(n)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=2, max_size=3), st.lists(running_job, max_size=5),
       st.lists(waiting_job, min_size=1, max_size=4), st.sampled_from(sorted(TIERS)), st.booleans())
def test_no_node_goes_past_its_pod_limit(slots, running, waiting, tiers, topology):
    free = {f"n{i}": s for i, s in enumerate(slots)}
    jobs = []
    for j, (q, n, be, prio) in enumerate(running):
        tasks = []
        for t in _tasks(f"r{j}", n, be, status="Running"):
            host = next((name for name, left in free.items() if left > 0), None)
            if host is None:
                break
            free[host] -= 1
            t.node_name = host
            tasks.append(t)
        if tasks:
            jobs.append(job(f"r{j}", queue=q, phase="Running", priority=prio, min_available=1, tasks=tasks))
    for j, (q, n, be, prio) in enumerate(waiting):
        jobs.append(job(f"w{j}", queue=q, priority=prio, min_available=1, tasks=_tasks(f"w{j}", n, be)))
    snap = snapshot(nodes=[node(name, cpu="16", memory="64Gi", pods=s)
                           for name, s in zip(free, slots, strict=True)],
                    queues=[queue("qa"), queue("qb")], jobs=jobs)
    cfg = conf("allocate, preempt, reclaim, backfill", TIERS[tiers],
               preempt={"enableTopologyAwarePreemption": topology})
    run(snap, cfg)
    for n in snap.nodes.values():
        limit = n.allocatable.max_task_num
        staying = sum(1 for t in n.tasks.values() if t.status is not TaskStatus.RELEASING)
        occupying = sum(1 for t in n.tasks.values() if t.status is not TaskStatus.PIPELINED)
        assert staying <= limit and occupying <= limit, (n.name, staying, occupying, limit)

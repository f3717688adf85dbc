"""Property: the forecast's estimates are the starts a cycle-by-cycle replay of the same
simulator produces (no arrivals, exact durations), whatever its shortcuts skipped.

Small random clusters: 2-3 nodes of 4 CPU, two queues, running jobs (some without a duration),
waiting gangs (Pending or already admitted), under three confs: Volcano's default, allocate
only (no enqueue: the idle-instant check applies) and one with preempt.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.forecast_bench import replay
from scheduler_core.forecast import forecast
from scheduler_core.framework.conf import DEFAULT_CONF
from scheduler_core.model import ClusterSnapshot
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

T = 1_767_229_200.0
HORIZON = 400.0
CONFS = {
    "default": DEFAULT_CONF,
    "allocate": conf("allocate, backfill", [["priority", "gang", "conformance"],
                                            ["drf", "predicates", "proportion", "nodeorder", "binpack"]]),
    "preempt": conf("enqueue, allocate, preempt", [["priority", "gang"], ["predicates", "nodeorder"]]),
}
durations = st.sampled_from([4.0, 10.0, 22.0, 40.0, 90.0])

# (queue, tasks, cpu each, duration (None: unknown), started seconds ago, priority)
running_job = st.tuples(st.sampled_from(["qa", "qb"]), st.integers(1, 2), st.integers(1, 2),
                        st.sampled_from([None, 4.0, 10.0, 22.0, 40.0, 90.0]), st.integers(0, 30),
                        st.integers(0, 10))
# (queue, gang size, cpu each: mostly too big for partly freed nodes, duration, phase, priority)
waiting_job = st.tuples(st.sampled_from(["qa", "qb"]), st.integers(1, 3), st.sampled_from([1, 3, 4, 4]),
                        durations, st.sampled_from(["Pending", "Inqueue"]), st.integers(0, 200))


def _build(n_nodes: int, running: list[tuple], waiting: list[tuple]) -> ClusterSnapshot:
    free = {f"n{i}": 4 for i in range(n_nodes)}
    jobs = []
    for j, (q, n, cpu, duration, age, prio) in enumerate(running):
        tasks = []
        for i in range(n):
            host = next((name for name, left in free.items() if left >= cpu), None)
            if host is None:
                break
            free[host] -= cpu
            tasks.append(task(f"r{j}-{i}", cpu=str(cpu), status="Running", node=host, started=T - age,
                              duration=duration, priority=prio))
        if tasks:
            jobs.append(job(f"r{j}", queue=q, min_available=len(tasks), phase="Running", created=T - 100 + j,
                            priority=prio, tasks=tasks))
    for j, (q, n, cpu, duration, phase, prio) in enumerate(waiting):
        jobs.append(job(f"w{j}", queue=q, min_available=n, phase=phase, created=T - 50 + j, priority=prio,
                        min_resources={"cpu": str(n * cpu)},
                        tasks=[task(f"w{j}-{i}", cpu=str(cpu), duration=duration, priority=prio)
                               for i in range(n)]))
    return snapshot(nodes=[node(name, cpu="4", memory="16Gi") for name in free],
                    queues=[queue("qa"), queue("qb", weight=2)], jobs=jobs, now=T)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3), st.lists(running_job, min_size=2, max_size=6), st.lists(waiting_job, min_size=1,
                                                                                   max_size=4),
       st.sampled_from(["allocate", "allocate", "default", "preempt"]))
def test_forecast_equals_the_replayed_starts(n_nodes: int, running: list[tuple], waiting: list[tuple],
                                             conf_name: str) -> None:
    cfg = CONFS[conf_name]
    fc = forecast(_build(n_nodes, running, waiting), cfg, horizon_s=HORIZON)
    starts, _ = replay(_build(n_nodes, running, waiting), cfg, horizon_s=HORIZON)
    estimated = {uid: j.estimated_start for uid, j in fc.jobs.items() if j.estimated_start is not None}
    assert estimated == starts

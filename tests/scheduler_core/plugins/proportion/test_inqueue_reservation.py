"""Inqueue bookkeeping of jobs that already hold their gang (proportion, capacity, overcommit).

A job bound in cycle N keeps phase Inqueue in our result and only turns Running at the close of
cycle N+1 (architecture.md), where Volcano's session close already makes it Running. In cycle
N+1 its minimum resources must therefore not be reserved again on top of its allocation:
Volcano reserves only `exceeded_part(min_resources, allocated)` for a job holding min_member.
"""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task


def _cycle_after_bind(phase: str, running: int):
    # Job a: min 2 tasks / 4 cpu, `running` of its 2-cpu tasks already hold n1.
    tasks = [task(f"a-{i}", cpu="2", memory="1Gi", status="Running", node="n1") for i in range(running)]
    tasks += [task(f"a-{i}", cpu="2", memory="1Gi") for i in range(running, 2)]
    a = job("a", queue="q", created=1.0, phase=phase, min_available=2, min_resources={"cpu": "4"},
            tasks=tasks)
    b = job("b", queue="q", created=2.0, phase="Pending", min_resources={"cpu": "4"},
            tasks=[task("b-0", cpu="4", memory="1Gi")])
    return a, b


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
@pytest.mark.parametrize(("phase", "running", "inqueue_cpu", "b_phase"), [
    # a holds its gang: reserve exceeded_part(4, 4) = 0; b: 4 + 4 + 0 - 0 = 8 <= 8 -> Inqueue,
    # then its 4 cpu are reserved: inqueue 4.
    pytest.param("Inqueue", 2, 4000.0, "Inqueue", id="inqueue-holding-gang"),
    pytest.param("Running", 2, 4000.0, "Inqueue", id="running-holding-gang"),
    # a holds 1 of 2 tasks: still waiting for its gang, its whole minimum stays reserved:
    # b: 4 + 2 + 4 = 10 > 8 -> stays Pending; inqueue 4 (a's).
    pytest.param("Inqueue", 1, 4000.0, "Pending", id="inqueue-partial-gang"),
])
def test_inqueue_not_reserved_twice(plugin, phase, running, inqueue_cpu, b_phase):
    a, b = _cycle_after_bind(phase, running)
    q = queue("q", capability={"cpu": "8"}, deserved={"cpu": "8"})
    snap = snapshot(nodes=[node("n1", cpu="16", memory="64Gi")], queues=[q], jobs=[a, b])
    result = run(snap, conf("enqueue", [["priority", "gang"], [plugin, "predicates"]]))
    assert result.job_phase["ns/b"] == b_phase
    assert result.queues["q"].inqueue.milli_cpu == inqueue_cpu


@pytest.mark.parametrize(("phase", "running", "b_phase"), [
    # idle pool = 9 x 1.0 - used. a holds its gang (used 4): reserves exceeded_part(4, 4) = 0,
    # b: 0 + 4 <= 5 -> Inqueue (reserving a's 4 again: 8 > 5, wrongly Pending).
    pytest.param("Inqueue", 2, "Inqueue", id="inqueue-holding-gang"),
    pytest.param("Running", 2, "Inqueue", id="running-holding-gang"),
    # a holds 1 task (used 2) and still reserves its 4: b: 4 + 4 > 7 -> Pending.
    pytest.param("Inqueue", 1, "Pending", id="inqueue-partial-gang"),
])
def test_overcommit_inqueue_not_reserved_twice(phase, running, b_phase):
    a, b = _cycle_after_bind(phase, running)
    snap = snapshot(nodes=[node("n1", cpu="9", memory="64Gi")], queues=[queue("q")], jobs=[a, b])
    tiers = [["priority", "gang"], [{"name": "overcommit", "arguments": {"overcommit-factor": 1.0}}]]
    result = run(snap, conf("enqueue", tiers))
    assert result.job_phase["ns/b"] == b_phase

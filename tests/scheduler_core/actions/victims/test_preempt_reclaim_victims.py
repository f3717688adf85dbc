"""Which victims preempt and reclaim evict, against Volcano and the semantics page (exact evictions):
the preemption policy, evictions that cannot help discarded, the budget spent on the first victim."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task


def _running(name: str, node_name: str, cpu: str = "2", **kw):
    return task(name, cpu=cpu, memory="1Gi", status="Running", node=node_name, **kw)


def _hog():
    # qb holds all 8 cpu of n1, n2 (4 cpu each); with qa asking 2, deserved is qa 2, qb 6.
    return job("hog", queue="qb", created=1.0,
               tasks=[_running(f"b-{i}", "n1" if i < 2 else "n2") for i in range(4)])


@pytest.mark.parametrize(("policy", "evictions", "pipelined"), [
    # qb is one task over deserved: the victim is the one evicted first on n1 (reverse task
    # order: same priority and creation time, so the later name b-1).
    pytest.param("PreemptLowerPriority", ["ns/b-1"], {"ns/a-0": "n1"}, id="may-reclaim"),
    # Kubernetes' Never: the task never causes an eviction, in reclaim as in preempt.
    pytest.param("Never", [], {}, id="never-does-not-reclaim"),
])
def test_reclaim_respects_preemption_policy(policy, evictions, pipelined):
    want = job("want", queue="qa", created=2.0,
               tasks=[task("a-0", cpu="2", memory="1Gi", preemption_policy=policy)])
    snap = snapshot(nodes=[node("n1"), node("n2")], queues=[queue("qa"), queue("qb")], jobs=[_hog(), want])
    result = run(snap, conf("reclaim", [["priority", "gang", "proportion", "predicates"]]))
    assert result.evictions == evictions
    assert result.pipelined == pipelined


@pytest.mark.parametrize(("cap", "evictions", "pipelined"), [
    # Capability 8: 4 + 3 <= 8 and n1 has 8 - 4 = 4 free: hi is pipelined before any eviction.
    pytest.param("8", [], {"ns/hi": "n1"}, id="fits-without-victims"),
    # Capability 4: qa holds 4 (o-0 2 + lo-0 1 + lo-1 1). Even with both lo tasks gone, 2 + 3 > 4:
    # hi can never be pipelined, so the evictions must be discarded, not committed.
    pytest.param("4", [], {}, id="quota-refuses-preemptor-no-useless-evictions"),
    # Capability 5: evicting lo-1 (lowest task order: same priority, later name first) leaves 3 + 3 > 5;
    # evicting lo-0 too leaves 2 + 3 = 5 <= 5 -> hi pipelined on n1 with both evicted.
    pytest.param("5", ["ns/lo-1", "ns/lo-0"], {"ns/hi": "n1"}, id="quota-met-after-two-victims"),
])
def test_preempt_within_job_discards_useless_evictions(cap, evictions, pipelined):
    j = job("j", queue="qa", created=1.0, tasks=[
        _running("lo-0", "n1", cpu="1", priority=1), _running("lo-1", "n1", cpu="1", priority=1),
        task("hi", cpu="3", memory="1Gi", priority=10)])
    other = job("o", queue="qa", created=0.5, tasks=[_running("o-0", "n1")])
    qa = queue("qa", capability={"cpu": cap}, deserved={"cpu": cap})
    snap = snapshot(nodes=[node("n1", cpu="8")], queues=[qa], jobs=[j, other])
    result = run(snap, conf("preempt", [["priority"], ["capacity", "predicates"]]))
    assert result.evictions == evictions
    assert result.pipelined == pipelined


def _two_priorities(queue_name: str, job_priority: int = 0):
    # 4 running 2-cpu tasks, gang min 3: b-0 (task priority 10) and b-1 (priority 1) share n1.
    return job("hog", queue=queue_name, created=1.0, min_available=3, priority=job_priority, tasks=[
        _running("b-0", "n1", priority=10), _running("b-1", "n1", priority=1),
        _running("b-2", "n2"), _running("b-3", "n2")])


@pytest.mark.parametrize("plugin", ["proportion", "gang"])
def test_reclaim_budget_goes_to_the_task_evicted_first(plugin):
    # One victim allowed: proportion (qb 8 > deserved 6 by one task) or gang (4 ready, min 3).
    # Candidates are offered in victim order (lowest task priority first), so the single victim
    # is b-1 (priority 1), not b-0 (priority 10) that merely sorts first by name.
    want = job("want", queue="qa", created=2.0, tasks=[task("a-0", cpu="2", memory="1Gi")])
    snap = snapshot(nodes=[node("n1"), node("n2")], queues=[queue("qa"), queue("qb")],
                    jobs=[_two_priorities("qb"), want])
    result = run(snap, conf("reclaim", [["priority", plugin, "predicates"]]))
    assert result.evictions == ["ns/b-1"]
    assert result.pipelined == {"ns/a-0": "n1"}


def test_preempt_budget_goes_to_the_task_evicted_first():
    # Same queue, preemptor job priority 5 > 0; gang lets hog lose one task: b-1 (priority 1).
    want = job("want", queue="q", created=2.0, priority=5, tasks=[task("a-0", cpu="2", memory="1Gi")])
    snap = snapshot(nodes=[node("n1"), node("n2")], queues=[queue("q")], jobs=[_two_priorities("q"), want])
    result = run(snap, conf("preempt", [["priority", "gang", "predicates"]]))
    assert result.evictions == ["ns/b-1"]
    assert result.pipelined == {"ns/a-0": "n1"}

"""preempt counts Volcano's preemption attempts (`volcano_total_preemption_attempts`): one per
node whose victims were validated, tried for a preemptor, whatever its outcome."""

from __future__ import annotations

import pytest

from tests.scheduler_core.actions.preempt.test_preempt import TIERS, _high, _low, _run
from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot


def nodes() -> list:
    """n1..n3, 4 cpu each (fresh: a snapshot takes its nodes over); low fills n1 and n2."""
    return [node("n1"), node("n2"), node("n3")]



@pytest.mark.parametrize(("jobs", "attempts"), [
    # n1 tried first (name order): its victims validated, the preemptor fits there.
    pytest.param([_low(), _high()], 1, id="first-node-fits"),
    # n1's tasks are not preemptable: no victims, no attempt; n2 is the one attempt.
    pytest.param([_low(n1_preemptable=False), _high()], 1, id="no-victims-no-attempt"),
    # A gang of two: one attempt on n1 for h-0, one on n2 for h-1.
    pytest.param([_low(), _high(n=2)], 2, id="gang-two-nodes"),
    # Nothing preemptable or nothing to preempt for: no attempt.
    pytest.param([_low(preemptable=False), _high()], 0, id="nothing-preemptable"),
    pytest.param([_low(), _high(preemption_policy="Never")], 0, id="never-policy"),
])
def test_attempts_between_jobs(jobs, attempts):
    result = run(snapshot(nodes=nodes(), jobs=jobs), conf("preempt", TIERS))
    assert result.counters.get("preemption_attempts", 0) == attempts


def test_a_refused_try_counts_each_node_it_tried_every_time():
    # The queue's capability (4 cpu, all used by low) refuses the 3-cpu preemptor on every node
    # even after evictions: n1 and n2 each validated a victim, an attempt each, none kept (n3 is
    # idle but has nothing to evict: no attempt). h-1 (same class) is not tried again on the
    # unchanged session, but Volcano would try it, counting the same two attempts: 4 in all.
    low = job("low", priority=1, created=1.0, tasks=[_run("l-0", "n1"), _run("l-1", "n2")])
    high = _high(n=2)
    high.min_available = 1
    snap = snapshot(nodes=nodes(), queues=[queue("q1", capability={"cpu": "4"})], jobs=[low, high])
    result = run(snap, conf("preempt", [["priority", "gang"], ["predicates", "capacity"]]))
    assert result.evictions == [] and result.pipelined == {}
    assert result.counters.get("preemption_attempts", 0) == 4


def test_the_topology_aware_path_counts_one_attempt_per_preemptor_placed():
    from tests.scheduler_core.actions.preempt.test_preempt_topology import _cfg, _high, _host, _low, _running

    low = _low(_running("l-0", "n1", "2"), _running("l-1", "n1", "1"), _running("l-2", "n1", "1"))
    result = run(snapshot(nodes=[_host("n1")], jobs=[low, _high("3")]), _cfg())
    assert result.pipelined == {"ns/h-0": "n1"}
    assert result.counters == {"preemption_attempts": 1}

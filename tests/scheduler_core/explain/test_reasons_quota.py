"""Queue-quota reasons: a job pipelined by preempt waits for it (not for the stale quota refusal),
and an overused queue's reason quotes its numbers."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task


def _running(name: str, node_name: str):
    return task(name, cpu="2", memory="1Gi", status="Running", node=node_name)


@pytest.mark.parametrize(("min_low", "evictions", "code", "message"), [
    # Queue q: 6 cpu, all held by L (priority 1). H (priority 10, 2 x 2 cpu, gang 2) is refused by
    # allocate (deserved 6, allocated 6: the gang's unmet minimum, "need 4, 0 left"). preempt then
    # evicts l-0 and l-1 (L keeps its min 1) and pipelines h-0 on n1, h-1 on n2: H now waits for
    # those evictions, and the quota refusal recorded before them is stale.
    pytest.param(1, ["ns/l-0", "ns/l-1"], "WaitingForPreemption",
                 "2 task(s) pipelined, waiting for releasing resources (preempt)", id="pipelined-by-preempt"),
    # L keeps min 2 of its 3 tasks: only one victim, H's gang cannot be pipelined, all discarded;
    # the queue refusal is what H faces.
    pytest.param(2, [], "QueueOverDeserved",
                 "queue q resource quota insufficient: insufficient cpu (need 4, 0 left)",
                 id="nothing-pipelined"),
])
def test_waiting_for_preemption_beats_stale_quota_refusal(min_low, evictions, code, message):
    low = job("L", queue="q", created=1.0, priority=1, min_available=min_low,
              tasks=[_running("l-0", "n1"), _running("l-1", "n2"), _running("l-2", "n3")])
    high = job("H", queue="q", created=2.0, priority=10, min_available=2,
               tasks=[task("h-0", cpu="2", memory="1Gi"), task("h-1", cpu="2", memory="1Gi")])
    snap = snapshot(nodes=[node(f"n{i}", cpu="2") for i in (1, 2, 3)], queues=[queue("q")], jobs=[low, high])
    tiers = [["priority", "gang"], ["proportion", "predicates", "nodeorder"]]
    result = run(snap, conf("enqueue, allocate, preempt", tiers))
    assert result.evictions == evictions
    reason = result.reasons["ns/H"]
    assert (str(reason.code), reason.message) == (code, message)


def test_overused_queue_reason_carries_the_numbers():
    # 8 cpu; qa runs 4 cpu and wants 2 more (request 6), qb wants 6: round 1 gives 4 cpu each,
    # nothing is left, so deserved qa = qb = 4. qa holds 4 >= 4: overused, allocate drops it.
    busy = job("busy", queue="qa", created=1.0, tasks=[
        task("r-0", cpu="4", memory=None, status="Running", node="n1"), task("p-0", cpu="2", memory=None)])
    other = job("other", queue="qb", created=2.0,
                tasks=[task(f"o-{i}", cpu="2", memory=None) for i in range(3)])
    snap = snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], queues=[queue("qa"), queue("qb")],
                    jobs=[busy, other])
    result = run(snap, conf("allocate", [["priority", "gang"], ["proportion", "predicates"]]))
    assert sorted(result.binds) == ["ns/o-0", "ns/o-1"]
    reason = result.reasons["ns/busy"]
    assert (str(reason.code), reason.message) == (
        "QueueOverDeserved", "queue qa is overused: allocated cpu 4 reached its deserved cpu 4")

"""reclaim: across queues, only from reclaimable queues above their deserved share."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task

# One tier: gang's and proportion's reclaimable answers are intersected.
TIERS = [["priority", "gang", "proportion", "predicates"]]


def _run(name: str, node_name: str, cpu: str = "2", **kw):
    return task(name, cpu=cpu, memory="1Gi", status="Running", node=node_name, **kw)


def _hog(n1: int = 2, n2: int = 2):
    tasks = [_run(f"b-{i}", "n1") for i in range(n1)] + [_run(f"b-{n1 + i}", "n2") for i in range(n2)]
    return job("hog", queue="qb", created=1.0, tasks=tasks)


def _want(cpu: str = "2", n: int = 1):
    return job("want", queue="qa", created=2.0, min_available=n,
               tasks=[task(f"a-{i}", cpu=cpu, memory="1Gi") for i in range(n)])


@pytest.mark.parametrize(("qb", "jobs", "evictions", "pipelined"), [
    # qb is one task over deserved: candidates are offered in victim order, so the one victim
    # is b-1 (reverse task order), the task evicted first (review HM).
    pytest.param(queue("qb"), [_hog(), _want()], ["ns/b-1"], {"ns/a-0": "n1"},
                 id="reclaim-from-over-deserved"),
    pytest.param(queue("qb", reclaimable=False), [_hog(), _want()], [], {},
                 id="queue-not-reclaimable"),
    pytest.param(queue("qb"), [_hog(n1=2, n2=0), _want(cpu="4")], [], {},
                 id="queue-within-deserved"),
    pytest.param(  # a gang of 2 x 4 cpu can only get n1 back (qb drops to deserved): all discarded
        queue("qb"), [_hog(), _want(cpu="4", n=2)], [], {}, id="gang-discard"),
])
def test_reclaim(qb, jobs, evictions, pipelined):
    snap = snapshot(nodes=[node("n1"), node("n2")], queues=[queue("qa"), qb], jobs=jobs)
    result = run(snap, conf("reclaim", TIERS))
    assert result.evictions == evictions
    assert result.pipelined == pipelined
    assert result.binds == {}


def test_reclaim_never_takes_from_own_queue():
    hog = job("hog", queue="qa", created=1.0, tasks=[_run(f"b-{i}", "n1") for i in range(2)])
    snap = snapshot(nodes=[node("n1")], queues=[queue("qa"), queue("qb")], jobs=[hog, _want()])
    result = run(snap, conf("reclaim", TIERS))
    assert result.evictions == []

"""Victim pruning in preempt/reclaim: job filters, the keyed victim order, the live bound.

These only save work: every test pins the exact answer the plain path gives.
"""

from __future__ import annotations

import itertools

import pytest

from scheduler_core.actions.victims.capacity import VictimCapacity
from scheduler_core.actions.victims.victims import VictimIndex, _victim_order_cmp, victim_order
from scheduler_core.framework.session import open_session
from scheduler_core.plugins.gang.gang import gang_may_give
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

DEFAULT_TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion"]]


def _running(name: str, node_name: str, cpu: str = "1", **kw):
    return task(name, cpu=cpu, memory="1Gi", status="Running", node=node_name, **kw)


def _session(jobs, tiers=DEFAULT_TIERS, nodes=None, queues=None):
    snap = snapshot(nodes=nodes or [node("n1", cpu="8"), node("n2", cpu="8")],
                    queues=queues or [queue("qa"), queue("qb"), queue("qc")], jobs=jobs)
    return open_session(snap, conf("preempt, reclaim", tiers))


@pytest.mark.parametrize(("running", "min_available", "expected"), [
    (3, 2, True), (2, 2, False), (1, 2, False), (2, 1, True),
])
def test_gang_may_give(running, min_available, expected):
    j = job("j", tasks=[_running(f"t{i}", "n1") for i in range(running)], min_available=min_available)
    _session([j])
    assert gang_may_give(j) is expected


@pytest.mark.parametrize(("tiers", "kind", "names"), [
    pytest.param(DEFAULT_TIERS, "preemptable", ["gang"], id="first-tier-gang"),
    pytest.param(DEFAULT_TIERS, "reclaimable", ["gang"], id="reclaim-first-tier-gang"),
    pytest.param([["conformance"], ["gang"]], "reclaimable", None, id="deciding-tier-unfiltered"),
    pytest.param([["priority"], ["predicates"]], "reclaimable", ["never"], id="no-callbacks"),
    pytest.param([[{"name": "gang", "enabledReclaimable": False}, "conformance"]], "reclaimable",
                 None, id="switched-off"),
])
def test_victim_job_filters(tiers, kind, names):
    ssn = _session([], tiers)
    filters = ssn.victim_job_filters(kind)
    if names is None:
        assert filters is None
    elif names == ["never"]:
        assert len(filters) == 1 and filters[0](job("x")) is False
    else:
        assert filters == [gang_may_give]


def _mixed_jobs():
    # Three queues, jobs of different priority, and two task priorities inside one job.
    a = job("a", queue="qa", priority=1, created=1.0,
            tasks=[_running("a0", "n1"), _running("a1", "n1", priority=5), _running("a2", "n1")])
    b = job("b", queue="qa", priority=3, created=2.0, tasks=[_running("b0", "n1"), _running("b1", "n1")])
    c = job("c", queue="qb", priority=2, created=0.5, tasks=[_running("c0", "n1")])
    d = job("d", queue="qc", priority=2, created=0.5, min_available=2,
            tasks=[_running("d0", "n1"), _running("d1", "n1")])
    want = job("w", queue="qa", priority=9, created=3.0, tasks=[task("w0")])
    return [a, b, c, d, want]


def test_victim_order_keyed_equals_comparator():
    jobs = _mixed_jobs()
    ssn = _session(jobs)
    index = VictimIndex(ssn)
    preemptor = ssn.jobs["ns/w"].tasks["ns/w0"]
    candidates = index.running_on(0)
    expected = [t.uid for t in _victim_order_cmp(ssn, preemptor, candidates)]
    # No victim-queue plugin: the reverse of the queue order (proportion shares qa 5/6, qb 1,
    # qc 1; the tie by name puts qb before qc), so qc gives first, then qb, then qa; in qa
    # reverse job order (a is lower priority), in a reverse task order (a1 has priority 5;
    # a0, a2 by uid).
    assert expected == ["ns/d1", "ns/d0", "ns/c0", "ns/a2", "ns/a0", "ns/a1", "ns/b1", "ns/b0"]
    for perm in itertools.islice(itertools.permutations(candidates), 0, 2000, 97):
        assert [t.uid for t in victim_order(ssn, preemptor, list(perm))] == expected
        assert [t.uid for t in victim_order(ssn, preemptor, list(perm), index, {})] == expected


def test_bound_follows_gang_minimum_and_evictions():
    # qb's job may lose one task on n1 (3 running, min 2); qc's job on n2 sits at its minimum.
    hog = job("hog", queue="qb", min_available=2,
              tasks=[_running(f"h{i}", "n1", cpu="2") for i in range(3)])
    tight = job("tight", queue="qc", min_available=2,
                tasks=[_running("t0", "n2", cpu="2"), _running("t1", "n2", cpu="2")])
    want = job("want", queue="qa", tasks=[task("w0", cpu="4")])
    nodes = [node("n1", cpu="6"), node("n2", cpu="6")]  # 2 cpu idle on n2, none on n1
    ssn = _session([hog, tight, want], nodes=nodes)
    index = VictimIndex(ssn)
    vcap = VictimCapacity(ssn, index, "reclaimable", ["qa", "qb", "qc"])
    w0 = ssn.jobs["ns/want"].tasks["ns/w0"]
    assert vcap.fit_rows(w0, without_queue="qa").tolist() == [True, False]
    assert vcap.fit_rows(w0, without_queue="qb").tolist() == [False, False]
    stmt = ssn.statement()
    stmt.evict(ssn.jobs["ns/hog"].tasks["ns/h0"], "reclaim")
    # hog now holds its minimum: nothing on n1 may go any more.
    assert vcap.fit_rows(w0, without_queue="qa").tolist() == [False, False]
    stmt.discard()
    assert vcap.fit_rows(w0, without_queue="qa").tolist() == [True, False]
    vcap.close()


def test_failure_memo_is_reset_by_any_event():
    hog = job("hog", queue="qb", tasks=[_running("h0", "n1"), _running("h1", "n1")])
    ssn = _session([hog])
    vcap = VictimCapacity(ssn, VictimIndex(ssn), "preemptable")
    vcap.remember_failure(("k",))
    assert vcap.failed_before(("k",)) is True
    assert vcap.failed_before(("other",)) is False
    stmt = ssn.statement()
    stmt.evict(ssn.jobs["ns/hog"].tasks["ns/h0"], "preempt")
    assert vcap.failed_before(("k",)) is False
    stmt.discard()
    assert vcap.failed_before(("k",)) is False
    vcap.close()


@pytest.mark.parametrize("world_size", ["S"])
def test_contention_world_same_decisions_without_pruning(world_size, monkeypatch):
    """The benchmark's contention world: pruning on and off give the very same result."""
    from scheduler_core.bench.generator import build_world
    from scheduler_core.bench.snapshot import conf_of, to_snapshot
    from scheduler_core.scheduler import run_session

    world = build_world(world_size, "contention", 1)

    def decide() -> dict:
        out = run_session(to_snapshot(world.spec), conf_of(world.spec)).to_json()
        out.pop("timing")
        return out

    pruned = decide()
    monkeypatch.setattr(VictimCapacity, "enabled", property(lambda self: False))
    monkeypatch.setattr(VictimCapacity, "failed_before", lambda self, key: False)
    plain = decide()
    assert pruned == plain
    assert len(pruned["evictions"]) > 100  # preempt and reclaim did act

"""reason_memo: jobs with the same inputs share one rendering, a kept snapshot keeps it across
sessions, and the reasons are exactly those rendered job by job."""

from __future__ import annotations

import json

import pytest

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.explain import job_entries, reason_memo
from scheduler_core.explain.reason_memo import freeze
from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.framework.conf import parse_conf
from scheduler_core.resources import Resource
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, queue, replicas, run, snapshot, task

CAPACITY = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates},
            {name: capacity, enableHierarchy: true}, {name: nodeorder}, {name: binpack}]
""")


def _reasons(result) -> dict[str, str]:
    return {uid: json.dumps(r.to_json(), sort_keys=True, default=str) for uid, r in result.reasons.items()}


@pytest.mark.parametrize("hierarchy", [False, True])
def test_shared_renderings_equal_job_by_job_ones(monkeypatch, hierarchy):
    world = build_world("S", "steady", 3)
    cfg = CAPACITY if hierarchy else conf_of(world.spec)
    churn = Churn(world)
    for _ in range(3):
        monkeypatch.setattr(reason_memo, "enabled", False)
        alone = run_session(to_snapshot(world.spec), cfg)
        monkeypatch.setattr(reason_memo, "enabled", True)
        shared = run_session(to_snapshot(world.spec), cfg)
        assert _reasons(shared) == _reasons(alone)
        assert len({id(r) for r in shared.reasons.values()}) < len(shared.reasons)  # some shared
        churn.apply(shared)
        churn.step()


def _stuck_cluster():
    # Two identical gangs that do not fit beside what runs: nothing is placed, so a second
    # session over the same snapshot sees the same inputs.
    busy = job("busy", "q1", [task("b1", cpu="2", status="Running", node="n1"),
                              task("b2", cpu="2", status="Running", node="n2")], min_available=1)
    jobs = [job(f"g{i}", "q1", replicas(f"g{i}w", 2, cpu="3"), min_available=2) for i in range(2)]
    nodes = [node("n1", cpu="4"), node("n2", cpu="4")]
    return snapshot(nodes=nodes, queues=[queue("q1")], jobs=[busy, *jobs])


def test_jobs_of_one_shape_share_and_a_kept_snapshot_keeps_the_object():
    snap = _stuck_cluster()
    first = run(snap)
    a, b = first.reasons["ns/g0"], first.reasons["ns/g1"]
    assert a.code is ReasonCode.GangUnschedulable and a is b
    second = run(snap)  # the same snapshot again: nothing changed, nothing rendered
    assert second.reasons["ns/g0"] is a and second.reasons["ns/g1"] is a


def test_a_job_is_answered_afresh_once_every_refresh_sessions(monkeypatch):
    # job_entries spreads the refresh: the job's bucket comes up once every REFRESH_EVERY
    # sessions, and only then is its reason rendered again (equal, a new object).
    monkeypatch.setattr(job_entries, "REFRESH_EVERY", 3)
    snap = _stuck_cluster()
    seen = [run(snap).reasons["ns/g0"] for _ in range(7)]
    due = job_entries.bucket_of("ns/g0")
    for k in range(1, 7):
        assert (seen[k] is not seen[k - 1]) == (k % 3 == due), k
        assert seen[k].to_json() == seen[0].to_json()


def test_a_reason_quoting_its_job_is_not_shared():
    snap = snapshot(nodes=[node("n1")], queues=[queue("q1")],
                    jobs=[job(f"p{i}", "q1", replicas(f"p{i}w", 1), phase="Pending") for i in range(2)])
    result = run(snap, None)
    reasons = [result.reasons[u] for u in sorted(result.reasons)]
    for r in reasons:
        if r.code is ReasonCode.NotEnqueued:
            assert reasons.count(r) == 1


def test_freeze_is_order_independent_and_sees_resources():
    assert freeze({"a": 1, "b": [1, {"c": 2}]}) == freeze({"b": [1, {"c": 2}], "a": 1})
    assert freeze({"r": Resource(1000, 5)}) != freeze({"r": Resource(1000, 6)})

"""overcommit: factor argument, virtual idle pool, inqueue reservations, enqueue gate."""

from __future__ import annotations

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.overcommit.overcommit import DEFAULT_FACTOR, parse_factor
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

GI = 2**30


@pytest.mark.parametrize("arguments,factor,warned", [
    ({}, 1.2, False),
    ({"overcommit-factor": 2}, 2.0, False),
    ({"overcommit-factor": "1.5"}, 1.5, False),
    ({"overcommit-factor": 1.0}, 1.0, False),
    ({"overcommit-factor": 0.5}, DEFAULT_FACTOR, True),
    ({"overcommit-factor": "abc"}, DEFAULT_FACTOR, True),
    ({"overcommit-factor": True}, DEFAULT_FACTOR, True),
])
def test_parse_factor(arguments, factor, warned):
    got, warning = parse_factor(arguments)
    assert got == factor and (warning is not None) is warned


def test_low_factor_warns_in_result():
    snap = snapshot(nodes=[node("n1")], jobs=[])
    result = run(snap, conf("enqueue", [[{"name": "overcommit", "arguments": {"overcommit-factor": 0.5}}]]))
    assert result.warnings == ["overcommit: invalid overcommit-factor 0.5: it cannot be less than 1, "
                               "using the default 1.2"]


def test_pool_counts_used_and_inqueue_reservations():
    jobs = [
        job("inq", tasks=[task("a")], min_resources={"cpu": "2"}, phase="Inqueue"),
        # Running with allocated >= min_available: holds min_resources minus allocated.
        job("run", tasks=[task("b", cpu="1", status="Running", node="n1")], min_resources={"cpu": "3"},
            phase="Running"),
        job("pend", tasks=[task("c")], min_resources={"cpu": "5"}, phase="Pending"),
        job("be", tasks=[task("d")], phase="Inqueue"),  # no min_resources: holds nothing
    ]
    ssn = open_session(snapshot(nodes=[node("n1", cpu="10", memory="10Gi")], jobs=jobs),
                       conf("enqueue", [["overcommit"]]))
    plugin = ssn.plugins["overcommit"]
    assert plugin.idle_resource.to_canonical() == {"cpu": 11000.0, "memory": 12 * GI - GI}
    assert plugin.inqueue_resource.to_canonical() == {"cpu": 4000.0, "memory": 0.0}


# (min cpu of Pending jobs in job order, factor, expected phases)
CASES = [
    (["4", "4"], None, ["Inqueue", "Inqueue"]),  # 8 cpu x 1.2 = 9.6 cpu pool
    (["5", "5"], None, ["Inqueue", "Pending"]),
    (["5", "5"], 2.5, ["Inqueue", "Inqueue"]),
    (["13"], None, ["Pending"]),
]


@pytest.mark.parametrize("mins,factor,phases", CASES)
def test_enqueue_gate(mins, factor, phases):
    # Two nodes of 4 cpu = 8 cpu, x1.2 = 9.6 cpu pool; memory is not requested, so not checked.
    jobs = [job(f"j{i}", tasks=[task(f"t{i}")], min_resources={"cpu": m}, phase="Pending", created=i)
            for i, m in enumerate(mins)]
    plugin = {"name": "overcommit"} if factor is None else {
        "name": "overcommit", "arguments": {"overcommit-factor": factor}}
    result = run(snapshot(nodes=[node("n1"), node("n2")], jobs=jobs), conf("enqueue", [[plugin]]))
    assert [result.job_phase[f"ns/j{i}"] for i in range(len(mins))] == phases


def test_rejection_reason_has_numbers():
    jobs = [job("big", tasks=[task("t")], min_resources={"cpu": "13", "memory": "1Gi"}, phase="Pending")]
    result = run(snapshot(nodes=[node("n1"), node("n2")], jobs=jobs), conf("enqueue", [["overcommit"]]))
    reason = result.reasons["ns/big"]
    assert (reason.code.value, reason.message) == (
        "NotEnqueued", "resource in cluster is overused (overcommit factor 1.2): "
                       "insufficient cpu (need 13, 9.6 left)")


def test_best_effort_job_always_enqueued():
    jobs = [job("be", tasks=[task("t", cpu="100")], phase="Pending")]
    result = run(snapshot(nodes=[node("n1")], jobs=jobs), conf("enqueue", [["overcommit"]]))
    assert result.job_phase == {"ns/be": "Inqueue"}

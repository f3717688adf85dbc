"""gang: validity, readiness per role, pipelined/starving, victims, job order, reasons."""

from __future__ import annotations

import pytest

from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.framework.session import close_session, open_session
from scheduler_core.plugins.gang.gang import (
    gang_victims,
    job_order,
    job_pipelined,
    job_ready,
    job_starving,
    job_valid,
)
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def _job(statuses, min_available, roles=None, role_min=None):
    """A wired job whose tasks have the given statuses (and roles), on node n1 when placed."""
    tasks = []
    for i, s in enumerate(statuses):
        placed = s not in ("Pending", "Succeeded", "Failed")
        tasks.append(task(f"t{i}", status=s, node="n1" if placed else None, role=(roles[i] if roles else "")))
    j = job("j", tasks=tasks, min_available=min_available, task_min_available=role_min or {})
    snapshot(nodes=[node("n1", cpu="100", memory="100Gi")], jobs=[j])
    return j


@pytest.mark.parametrize(
    "statuses,min_available,reason",
    [
        (["Pending", "Pending"], 2, None),
        (["Pending", "Pending"], 3, "NotEnoughTasks"),  # min_member above the task count
        (["Running", "Failed", "Pending"], 3, "NotEnoughTasks"),
        (["Succeeded", "Pipelined", "Pending"], 3, None),
    ],
)
def test_job_valid(statuses, min_available, reason):
    res = job_valid(_job(statuses, min_available))
    assert (res.reason if res else None) == reason
    if reason == "NotEnoughTasks":
        assert res.passed is False and res.message.startswith(
            "Not enough valid tasks for gang-scheduling, valid: "
        )


def test_job_valid_per_role():
    j = _job(
        ["Pending", "Failed", "Pending"], 3, roles=["ps", "ps", "worker"], role_min={"ps": 2, "worker": 1}
    )
    res = job_valid(j)
    assert (res.passed, res.reason) == (False, "NotEnoughPodsOfTask")


@pytest.mark.parametrize(
    "statuses,roles,role_min,min_available,ready,pipelined,starving",
    [
        (["Allocated", "Running", "Pending"], None, None, 2, True, 1, False),
        (["Allocated", "Pending", "Pending"], None, None, 2, False, -1, True),
        (["Allocated", "Pipelined", "Pending"], None, None, 2, False, 1, False),
        # per role: gang of 2 met by two ps tasks, but the worker role (min 1) has none placed
        (
            ["Running", "Allocated", "Pending"],
            ["ps", "ps", "worker"],
            {"ps": 1, "worker": 1},
            2,
            False,
            -1,
            False,
        ),
        (
            ["Running", "Allocated", "Pipelined"],
            ["ps", "worker", "worker"],
            {"ps": 1, "worker": 2},
            3,
            False,
            1,
            False,
        ),
        (
            ["Running", "Allocated", "Allocated"],
            ["ps", "worker", "worker"],
            {"ps": 1, "worker": 2},
            3,
            True,
            1,
            False,
        ),
        # roles summing above min_member are not checked
        (
            ["Running", "Running", "Pending"],
            ["ps", "ps", "worker"],
            {"ps": 2, "worker": 2},
            2,
            True,
            1,
            False,
        ),
    ],
)
def test_ready_pipelined_starving(statuses, roles, role_min, min_available, ready, pipelined, starving):
    j = _job(statuses, min_available, roles, role_min)
    assert (job_ready(j), job_pipelined(j), job_starving(j)) == (ready, pipelined, starving)


def test_job_order_not_ready_first():
    ready, waiting = _job(["Running"], 1), _job(["Pending"], 1)
    assert (job_order(waiting, ready), job_order(ready, waiting), job_order(ready, ready)) == (-1, 1, 0)


def test_victims_keep_min_member():
    a = [task(f"a{i}", status="Running", node="n1") for i in range(4)]
    b = [task(f"b{i}", status="Running", node="n1") for i in range(2)]
    ja, jb = job("a", tasks=a, min_available=2), job("b", tasks=b, min_available=2)
    pre = job("p", tasks=[task("p0")])
    ssn = open_session(
        snapshot(nodes=[node("n1", cpu="100", memory="100Gi")], jobs=[ja, jb, pre]),
        conf("allocate", [["gang"]]),
    )
    cands = list(ja.tasks.values()) + list(jb.tasks.values())
    assert [t.name for t in gang_victims(ssn, cands)] == ["a0", "a1"]
    assert [t.name for t in ssn.preemptable(pre.tasks["ns/p0"], cands)] == ["a0", "a1"]
    assert [t.name for t in ssn.reclaimable(pre.tasks["ns/p0"], cands)] == ["a0", "a1"]


def test_close_records_gang_reason_for_not_ready_jobs():
    j = job("g", tasks=[task(f"w{i}", cpu="3") for i in range(3)], min_available=3)
    ok = job("ok", tasks=[task("x", cpu="1", status="Running", node="n1")], phase="Running")
    ssn = open_session(snapshot(nodes=[node("n1", cpu="4")], jobs=[j, ok]), conf("allocate", [["gang"]]))
    close_session(ssn)
    recs = ssn.reason_records
    assert list(recs) == ["ns/g"]
    rec = recs["ns/g"][0]
    assert (rec["code"], rec["plugin"]) == (ReasonCode.GangUnschedulable, "gang")
    assert (
        rec["message"] == "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"
    )
    assert rec["details"] == {"min_available": 3, "placed": 0, "tasks": 3}

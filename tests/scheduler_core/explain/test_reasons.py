"""Reasons: Volcano-style messages, precedence of recorded candidates, result JSON shape."""

from __future__ import annotations

import pytest

from scheduler_core.explain.reasons import (
    FitErrors,
    Reason,
    ReasonCode,
    build_reasons,
    fit_message,
    format_amount,
    gang_message,
    insufficient_message,
)
from scheduler_core.framework.session import open_session
from scheduler_core.model import QueueInfo, QueueState, TaskStatus
from scheduler_core.resources import Resource
from scheduler_core.result import PodGroupCondition, QueueFigures, SessionResult
from tests.scheduler_core.builders import conf, job, node, replicas, res, run, snapshot, task

C = ReasonCode
GI = 2**30


def test_fit_errors_message_sorts_counts_descending_then_text():
    fe = FitErrors(20)
    fe.add("node(s) had untolerated taint {gpu: true}", 8)
    fe.add("Insufficient cpu", 12)
    assert fe.message() == ("0/20 nodes are unavailable: 12 Insufficient cpu, "
                            "8 node(s) had untolerated taint {gpu: true}.")
    assert fit_message(3, {"b": 1, "a": 1, "c": 0}) == "0/3 nodes are unavailable: 1 a, 1 b."
    assert fe.to_dict() == {"nodes": 20, "reasons": {"node(s) had untolerated taint {gpu: true}": 8,
                                                     "Insufficient cpu": 12}}


@pytest.mark.parametrize("name,stored,text", [
    ("cpu", 10000, "10"), ("cpu", 500, "0.5"), ("memory", 4 * GI, "4Gi"), ("memory", 512 * 2**20, "512Mi"),
    ("memory", 1000, "1000"), ("memory", 0, "0"), ("nvidia.com/gpu", 2000, "2"),
])
def test_format_amount(name, stored, text):
    assert format_amount(name, stored) == text


def test_insufficient_message_matches_semantics_wording():
    text = insufficient_message("training", ["cpu"], res("10"), res("4"))
    assert text == "queue training resource quota insufficient: insufficient cpu (need 10, 4 left)"
    left = Resource(-1000, GI)  # negative headroom reads as 0 left
    text = insufficient_message("q", ["cpu", "memory"], res("2", "4Gi"), left, what="capability")
    assert text == ("queue q capability insufficient: insufficient cpu (need 2, 0 left), "
                    "insufficient memory (need 4Gi, 1Gi left)")


def test_gang_message_counts_statuses_and_min_available():
    j = job("g", tasks=[*replicas("w", 1), task("r", status="Running", node="n1")], min_available=4)
    j2 = job("g2", tasks=[task("p0"), task("p1", status="Pipelined", node="n1")], min_available=3)
    for jj in (j, j2):  # rebuild the status index as ClusterSnapshot.build does
        snapshot(nodes=[node("n1")], jobs=[jj])
    assert gang_message(j) == ("3/2 tasks in gang unschedulable: pod group is not ready, "
                               "1 Pending, 1 Running, 4 minAvailable")
    assert gang_message(j2) == ("2/2 tasks in gang unschedulable: pod group is not ready, "
                                "1 Pending, 1 Pipelined, 3 minAvailable")


def session(jobs, queues=None, nodes=None):
    snap = snapshot(nodes=nodes or [node("n1")], queues=queues, jobs=jobs)
    return open_session(snap, conf("allocate", []))


def test_only_jobs_with_unbound_tasks_get_a_reason():
    done = job("done", tasks=[task("a", status="Running", node="n1")])
    bound = job("bound", tasks=[task("b", status="Allocated", node="n1")])
    waiting = job("waiting", tasks=[task("c")])
    ssn = session([done, bound, waiting])
    ssn.result.binds["ns/b"] = "n1"
    assert sorted(build_reasons(ssn)) == ["ns/waiting"]


# (recorded codes in recording order, phase, expected code)
PRECEDENCE = [
    (["QueueOverDeserved", "InvalidJob"], "Inqueue", C.InvalidJob),
    (["QueueOverCapability", "QueueClosed"], "Inqueue", C.QueueClosed),
    (["QueueOverCapability", "NotEnqueued"], "Pending", C.NotEnqueued),
    (["QueueOverDeserved", "QueueOverCapability"], "Inqueue", C.QueueOverCapability),
    (["WaitingForPreemption", "QueueOverDeserved"], "Inqueue", C.QueueOverDeserved),
    (["WaitingForPreemption"], "Inqueue", C.WaitingForPreemption),
    (["Unknown"], "Inqueue", C.Unknown),
    (["NoSuchCode"], "Inqueue", C.Unknown),
]


@pytest.mark.parametrize("codes,phase,expected", PRECEDENCE)
def test_precedence_of_recorded_reasons(codes, phase, expected):
    ssn = session([job("j", tasks=[task("t")], phase=phase)])
    chain = {"queue_chain": [{"queue": "q1", "headroom": {"cpu": 0.0}}], "limit": "deserved", "extra": 1}
    for c in codes:
        ssn.record_reason("ns/j", c, f"msg {c}", "test", chain)
    reason = build_reasons(ssn)["ns/j"]
    assert reason.code is expected
    assert reason.message == ("msg NoSuchCode" if codes == ["NoSuchCode"] else f"msg {expected.value}")
    # What the recorder measured mid-session (queue chain, limit) is not passed on: the figures
    # of a reason are rendered at close; its other details are kept.
    assert reason.details == {"extra": 1}


# NeverFits comes right after InvalidJob, before every recorded or derived reason.
NEVER_PRECEDENCE = [
    ("InvalidJob", "Inqueue", C.InvalidJob),
    ("QueueClosed", "Inqueue", C.NeverFits),
    ("NotEnqueued", "Pending", C.NeverFits),
    ("QueueOverCapability", "Pending", C.NeverFits),
    ("QueueOverDeserved", "Inqueue", C.NeverFits),
    ("GangUnschedulable", "Inqueue", C.NeverFits),
    ("Unknown", "Inqueue", C.NeverFits),
]


@pytest.mark.parametrize("code,phase,expected", NEVER_PRECEDENCE)
def test_never_fits_precedence(code, phase, expected):
    # One 4-cpu node; the task asks 5 cpu: it can never run.
    ssn = session([job("j", tasks=[task("t", cpu="5")], phase=phase)])
    ssn.record_reason("ns/j", code, f"msg {code}", "test")
    reason = build_reasons(ssn)["ns/j"]
    assert reason.code is expected
    if expected is C.NeverFits:
        assert reason.message == "a task needs 5 cpu, the largest node it can use has 4"


def test_closed_queue_job_that_can_never_fit_says_never_fits():
    closed = QueueInfo(name="shut", state=QueueState.CLOSED)
    jobs = [job("big", queue="shut", tasks=[task("t", cpu="5")]), job("ok", queue="shut", tasks=[task("u")])]
    ssn = session(jobs, queues=[closed])
    got = {uid: (r.code, r.message) for uid, r in build_reasons(ssn).items()}
    assert got == {"ns/big": (C.NeverFits, "a task needs 5 cpu, the largest node it can use has 4"),
                   "ns/ok": (C.QueueClosed, "queue shut is closed")}


def test_derived_reasons_without_records():
    closed = QueueInfo(name="closed", state=QueueState.CLOSED)
    jobs = [job("lost", queue="nowhere", tasks=[task("t1")]), job("shut", queue="closed", tasks=[task("t2")]),
            job("new", tasks=[task("t3")], phase="Pending"), job("idle", tasks=[task("t4")]),
            job("piped", tasks=[task("t5", status="Pipelined", node="n1")])]
    ssn = session(jobs, queues=[QueueInfo(name="q1"), closed])
    got = {uid: (r.code, r.message) for uid, r in build_reasons(ssn).items()}
    assert got == {
        "ns/lost": (C.InvalidJob, "queue nowhere does not exist"),
        "ns/shut": (C.QueueClosed, "queue closed is closed"),
        "ns/new": (C.NotEnqueued, "job ns/new is not enqueued yet"),
        "ns/idle": (C.Unknown, "1 task(s) not scheduled; no action recorded why"),
        "ns/piped": (C.WaitingForPreemption, "1 task(s) pipelined, waiting for resources being released"),
    }


def test_gang_reason_includes_node_fit_summary_of_first_failing_task():
    j = job("mpi", tasks=[task("w0", status="Running", node="n1"), *replicas("w", 3)[1:]], min_available=3)
    ssn = session([j], nodes=[node("n1"), node("n2")])
    ssn.record_fit_errors("ns/mpi", "ns/w-2", FitErrors(2, {"Insufficient memory": 2}))
    ssn.record_fit_errors("ns/mpi", "ns/w-1", FitErrors(2, {"Insufficient cpu": 2}))
    reason = build_reasons(ssn)["ns/mpi"]
    assert reason.code is C.GangUnschedulable
    assert reason.message == ("2/3 tasks in gang unschedulable: pod group is not ready, 2 Pending, "
                              "1 Running, 3 minAvailable; 0/2 nodes are unavailable: 2 Insufficient cpu.")
    assert reason.details == {"node_failures": {"Insufficient cpu": 2}}


def test_ready_elastic_job_with_fit_errors_is_node_fit():
    j = job("el", tasks=[task("a", status="Running", node="n1"), task("b")], min_available=1)
    ssn = session([j])
    ssn.record_fit_errors("ns/el", "ns/b", FitErrors(1, {"Insufficient cpu": 1}))
    ssn.record_reason("ns/el", C.WaitingForPreemption, "ignored: fit is more specific", "test")
    reason = build_reasons(ssn)["ns/el"]
    assert (reason.code, reason.message) == (C.NodeFit, "0/1 nodes are unavailable: 1 Insufficient cpu.")


def test_end_to_end_allocate_records_node_fit():
    # n1 (4 cpu) runs 2 cpu: "big" (3 cpu) fits n1 once that task finishes, so NodeFit, not NeverFits.
    running = job("run", tasks=[task("r", cpu="2", status="Running", node="n1")])
    snap = snapshot(nodes=[node("n1", cpu="4"), node("n2", cpu="1")],
                    jobs=[running, job("big", tasks=[task("t", cpu="3")]),
                          job("ok", tasks=[task("s", cpu="1")])])
    result = run(snap, conf("allocate", []))
    assert result.binds == {"ns/s": "n1"}
    assert result.to_json()["reasons"] == {"ns/big": {
        "code": "NodeFit", "message": "0/2 nodes are unavailable: 2 Insufficient cpu.",
        "details": {"node_failures": {"Insufficient cpu": 2}}}}


def test_end_to_end_task_larger_than_any_node_keeps_the_fit_summary():
    snap = snapshot(nodes=[node("n1", cpu="2"), node("n2", cpu="1")],
                    jobs=[job("big", tasks=[task("t", cpu="3")])])
    result = run(snap, conf("allocate", []))
    assert result.to_json()["reasons"] == {"ns/big": {
        "code": "NeverFits", "message": "a task needs 3 cpu, the largest node it can use has 2",
        "details": {"kind": "TaskLargerThanAnyNode", "task": "ns/t", "dimension": "cpu", "need": 3.0,
                    "limit": 2.0, "nodes": 2, "matching_nodes": 2,
                    "node_failures": {"Insufficient cpu": 2}}}}


def test_session_result_to_json_shape():
    r = SessionResult(binds={"b/t": "n2", "a/t": "n1"}, evictions=["x/v"], job_phase={"a/j": "Running"})
    r.queues["q"] = QueueFigures(deserved=res("60", "240Gi"), allocated=Resource.from_quantities(
        {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": 1, "pods": 3}), share=1 / 30)
    r.reasons["a/j"] = Reason(C.QueueOverCapability, "queue q resource quota insufficient", {})
    r.warn("w1")
    r.warn("w1")
    r.timing["session_s"] = 0.004
    r.conditions["a/j"] = PodGroupCondition("Unschedulable", "NotEnoughResources", "1/1 tasks ...",
                                           1767225600.7)
    assert r.to_json() == {
        "binds": {"a/t": "n1", "b/t": "n2"}, "pipelined": {}, "evictions": ["x/v"],
        "job_phase": {"a/j": "Running"},
        "queues": {"q": {"deserved": {"cpu": 60.0, "memory": 240.0 * GI},
                         "allocated": {"cpu": 2.0, "memory": 2.0 * GI, "nvidia.com/gpu": 1.0},
                         "share": 0.0333}},
        "reasons": {"a/j": {"code": "QueueOverCapability", "message": "queue q resource quota insufficient",
                            "details": {}}},
        "warnings": ["w1"], "job_errors": {}, "timing": {"session_s": 0.004},
        "conditions": {"a/j": [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                "message": "1/1 tasks ...", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }


def test_reason_code_values_are_names():
    assert [c.value for c in C] == [c.name for c in C]
    assert TaskStatus.PENDING.value == "Pending"

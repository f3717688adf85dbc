"""enqueue: admission by min_resources against the queue, round-robin, best-effort jobs."""

from __future__ import annotations

import pytest

from scheduler_core.actions.enqueue.enqueue import EnqueueAction
from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task

TIERS = [["priority", "gang"], ["predicates", "proportion"]]


@pytest.mark.parametrize(("queues", "jobs", "phases"), [
    pytest.param(  # 3 + 3 cpu would exceed capability 4: the later job stays Pending
        [queue("q1", capability={"cpu": "4"})],
        [job("a", phase="Pending", min_resources={"cpu": "3"}, tasks=[task("a0", cpu="3")], created=1.0),
         job("b", phase="Pending", min_resources={"cpu": "3"}, tasks=[task("b0", cpu="3")], created=2.0)],
        {"ns/a": "Inqueue", "ns/b": "Pending"}, id="capability-rejects"),
    pytest.param(  # no min_resources: admitted without asking the plugins
        [queue("q1", capability={"cpu": "1"})],
        [job("a", phase="Pending", tasks=[task("a0", cpu="3")])],
        {"ns/a": "Inqueue"}, id="best-effort-job"),
    pytest.param(  # a closed queue admits nothing that asks for resources
        [queue("q1", state="Closed")],
        [job("a", phase="Pending", min_resources={"cpu": "1"}, tasks=[task("a0")])],
        {"ns/a": "Pending"}, id="closed-queue"),
    pytest.param(  # room enough: both admitted
        [queue("q1"), queue("q2")],
        [job("a", queue="q1", phase="Pending", min_resources={"cpu": "2"}, tasks=[task("a0", cpu="2")]),
         job("b", queue="q2", phase="Pending", min_resources={"cpu": "2"}, tasks=[task("b0", cpu="2")])],
        {"ns/a": "Inqueue", "ns/b": "Inqueue"}, id="two-queues"),
])
def test_enqueue(queues, jobs, phases):
    snap = snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], queues=queues, jobs=jobs)
    result = run(snap, conf("enqueue", TIERS))
    assert {k: result.job_phase[k] for k in phases} == phases
    assert result.binds == {}


def test_rejected_job_gets_a_reason():
    snap = snapshot(nodes=[node("n1", cpu="8")], queues=[queue("q1", capability={"cpu": "2"})],
                    jobs=[job("a", phase="Pending", min_resources={"cpu": "3"}, tasks=[task("a0", cpu="3")])])
    ssn = open_session(snap, conf("enqueue", TIERS))
    EnqueueAction().execute(ssn)
    assert snap.jobs["ns/a"].phase.value == "Pending"
    assert ssn.reason_records["ns/a"]


def test_enqueue_then_allocate_binds_admitted_job_only():
    snap = snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], queues=[queue("q1", capability={"cpu": "4"})],
                    jobs=[job("a", phase="Pending", min_resources={"cpu": "3"}, tasks=[task("a0", cpu="3")],
                              created=1.0),
                          job("b", phase="Pending", min_resources={"cpu": "3"}, tasks=[task("b0", cpu="3")],
                              created=2.0)])
    result = run(snap, conf("enqueue, allocate", TIERS))
    assert result.binds == {"ns/a0": "n1"}
    assert result.job_phase == {"ns/a": "Inqueue", "ns/b": "Pending"}


def test_queue_order_then_job_order_under_a_cluster_limit():
    # overcommit admits 8 cpu x 1.2 = 9.6 cpu in all. Shares tie (nothing allocated), so the
    # queue order falls back to the name: qa serves both its jobs (job order) before qb.
    jobs = [job("b1", queue="qb", phase="Pending", min_resources={"cpu": "4"}, tasks=[task("b", cpu="4")],
                created=0.0),
            job("a2", queue="qa", phase="Pending", min_resources={"cpu": "4"}, tasks=[task("y", cpu="4")],
                created=2.0),
            job("a1", queue="qa", phase="Pending", min_resources={"cpu": "4"}, tasks=[task("x", cpu="4")],
                created=1.0)]
    snap = snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], queues=[queue("qa"), queue("qb")], jobs=jobs)
    result = run(snap, conf("enqueue", [["priority", "gang"], ["overcommit", "proportion"]]))
    assert result.job_phase == {"ns/a1": "Inqueue", "ns/a2": "Inqueue", "ns/b1": "Pending"}

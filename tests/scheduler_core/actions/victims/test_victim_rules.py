"""Issue 17 rules 1, 4-7 in detail: enqueue without job_valid, undo of a failed node, pod slots,
candidate nodes for preempt/reclaim, victim queue order, the topology-aware preemption switch."""

from __future__ import annotations

import pytest

from scheduler_core.actions.enqueue.enqueue import EnqueueAction
from scheduler_core.actions.victims.nodes import NodeCheck, undo_since
from scheduler_core.actions.victims.victims import victim_queue_compare
from scheduler_core.framework.conf import parse_conf
from scheduler_core.framework.isolation import JobError
from scheduler_core.framework.session import open_session
from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task

TIERS = [["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"]]
HOST = "kubernetes.io/hostname"


def _anti(label: str) -> dict:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": label}}, "topologyKey": HOST}]}}


# -- rule 1 ----------------------------------------------------------------------------------------
def test_enqueue_admits_a_podgroup_without_pods_but_not_a_quarantined_job():
    snap = snapshot(nodes=[node("n1", cpu="8")], queues=[queue("q1")],
                    jobs=[job("empty", phase="Pending", min_available=2, min_resources={"cpu": "1"}),
                          job("bad", phase="Pending", min_resources={"cpu": "1"}, tasks=[task("b0")])])
    ssn = open_session(snap, conf("enqueue", TIERS))
    ssn.quarantine(ssn.jobs["ns/bad"], JobError("screen", "ShapeError", "broken", "tasks[0]"))
    EnqueueAction().execute(ssn)
    assert ssn.jobs["ns/empty"].phase.value == "Inqueue"  # gang would call it invalid (0 < 2)
    assert ssn.jobs["ns/bad"].phase.value == "Pending"


# -- rules 5 and 6: candidate nodes and the one-row re-check ----------------------------------------
def test_candidates_keep_fixable_failures_and_drop_the_rest():
    nodes = [node("full", pods=1, labels={HOST: "full"}),
             node("anti", labels={HOST: "anti"}),
             node("tainted", labels={HOST: "tainted"},
                  taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
             node("cordoned", labels={HOST: "cordoned"}, unschedulable=True),
             node("other-zone", labels={HOST: "other-zone", "zone": "b"})]
    running = job("r", phase="Running", tasks=[
        task("r0", status="Running", node="full"),
        task("r1", status="Running", node="anti", labels={"app": "db"})])
    t = task("t", affinity=_anti("db"), node_selector={})
    ssn = open_session(snapshot(nodes=nodes, jobs=[running, job("j", tasks=[t])]), conf("preempt", TIERS))
    check = NodeCheck(ssn)
    names = ssn.node_table.names
    assert [names[i] for i, ok in enumerate(check.candidates(t)) if ok] == ["anti", "full", "other-zone"]
    row = {n: i for i, n in enumerate(names)}
    assert not check.fits(t, row["full"]) and not check.fits(t, row["anti"])
    # Evicting the pod that blocks each node makes it fit (Releasing tasks count as gone).
    stmt = ssn.statement()
    stmt.evict(ssn.jobs["ns/r"].tasks["ns/r0"], "preempt")
    stmt.evict(ssn.jobs["ns/r"].tasks["ns/r1"], "preempt")
    assert check.fits(t, row["full"]) and check.fits(t, row["anti"])


def test_undo_since_restores_only_the_tail():
    tasks = [task(f"b{i}", status="Running", node="n1") for i in range(3)]
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=[job("b", tasks=tasks, phase="Running")]),
                       conf("preempt", TIERS))
    b = ssn.jobs["ns/b"].tasks
    stmt = ssn.statement()
    stmt.evict(b["ns/b0"], "preempt")
    stmt.evict(b["ns/b1"], "preempt")
    stmt.evict(b["ns/b2"], "preempt")
    undo_since(ssn, stmt, 1)
    assert [b[f"ns/b{i}"].status for i in range(3)] == [TaskStatus.RELEASING, TaskStatus.RUNNING,
                                                        TaskStatus.RUNNING]
    assert ssn.nodes["n1"].releasing.milli_cpu == 1000
    stmt.commit()
    assert ssn.result.evictions == ["ns/b0"]


@pytest.mark.parametrize(("preemptor_cpu", "evicted"), [
    pytest.param("1", ["ns/zb"], id="pod-slot-from-a-best-effort-victim"),
    pytest.param(None, ["ns/zb"], id="best-effort-preemptor-takes-best-effort"),
])
def test_pod_limit_preempt(preemptor_cpu, evicted):
    # Victims in reverse task order: zb (best-effort) first; gang keeps one of the two.
    low = job("low", phase="Running", priority=1, min_available=1, tasks=[
        task("zb", cpu=None, memory=None, status="Running", node="n1"),
        task("r0", status="Running", node="n1")])
    high = job("high", priority=100, tasks=[task("h0", cpu=preemptor_cpu, memory=None if preemptor_cpu is None
                                                 else "1Gi")])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=2)], jobs=[low, high])
    result = run(snap, conf("allocate, preempt", TIERS))
    assert result.evictions == evicted
    assert result.pipelined == {"ns/h0": "n1"}


def test_best_effort_preemptor_never_takes_a_resource_victim():
    low = job("low", phase="Running", priority=1, tasks=[task("r0", status="Running", node="n1"),
                                                         task("r1", status="Running", node="n1")])
    high = job("high", priority=100, tasks=[task("h0", cpu=None, memory=None)])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=2)], jobs=[low, high])
    result = run(snap, conf("allocate, preempt", TIERS))
    assert result.evictions == [] and result.pipelined == {}


# -- rule 7 ----------------------------------------------------------------------------------------
def test_victim_queue_order_is_the_reverse_queue_order_unless_a_plugin_decides():
    jobs = [job("a", queue="qa", phase="Running", tasks=[task("a0", status="Running", node="n1")]),
            job("b", queue="qb", phase="Running", tasks=[task("b0", status="Running", node="n1"),
                                                        task("b1", status="Running", node="n1")])]
    qs = [queue("qa", created=5.0), queue("qb", created=1.0)]
    ssn = open_session(snapshot(nodes=[node("n1", cpu="8")], queues=qs, jobs=jobs),
                       conf("reclaim", [["priority", "gang"], ["proportion"]]))
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    # proportion: both queues hold what they deserve (share 1); the tie goes by creation time,
    # qb (1.0) before qa (5.0). The old fallback (creation time) would take from qb first.
    assert ssn.queue_compare(qb, qa) < 0
    assert victim_queue_compare(ssn, qa, qb, qa) < 0  # qa is served last: it gives first

    def plugin(lhs, rhs, pq):
        return -1 if lhs.name == "qb" else 1

    ssn.add_victim_queue_order_fn("proportion", plugin)
    assert victim_queue_compare(ssn, qb, qa, qa) < 0


# -- the topology-aware preemption switch ----------------------------------------------------------
@pytest.mark.parametrize("value", [False, True, "yes"])
def test_topology_aware_preemption_switch_is_never_refused(value):
    # Volcano ignores a value of the wrong type (the action warns and keeps the default).
    data = {"actions": "preempt", "tiers": [{"plugins": [{"name": "priority"}]}],
            "configurations": [{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": value}}]}
    assert parse_conf(data).configurations["preempt"] == {"enableTopologyAwarePreemption": value}

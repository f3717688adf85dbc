"""Pod slots are part of every action's own fit test, with or without the predicates plugin."""

from __future__ import annotations

import numpy as np

from scheduler_core.framework.node_table import NodeTable
from scheduler_core.model import NodeInfo
from scheduler_core.resources import Resource
from tests.scheduler_core.builders import conf, job, node, replicas, res, run, snapshot, task

NO_PREDICATES = [["priority", "gang"], ["proportion"]]


def _running(name: str, node_name: str, cpu: str | None = "1", **kw):
    mem = None if cpu is None else "1Gi"
    return task(name, cpu=cpu, memory=mem, status="Running", node=node_name, **kw)


def test_allocate_binds_one_task_on_a_one_pod_node_without_predicates():
    snap = snapshot(nodes=[node("n1", cpu="8", pods=1)], jobs=[job("j", tasks=replicas("w", 2, cpu="1"))])
    result = run(snap, conf("allocate", NO_PREDICATES))
    assert result.binds == {"ns/w-0": "n1"}
    assert result.reasons["ns/j"].message == "0/1 nodes are unavailable: 1 Insufficient pods."


def test_allocate_pipelines_onto_the_slot_a_releasing_task_gives_back():
    leaving = job("old", phase="Running", tasks=[task("o", cpu="1", status="Releasing", node="n1")])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=1)], jobs=[leaving, job("j", tasks=replicas("w", 2))])
    result = run(snap, conf("allocate", NO_PREDICATES))
    assert result.binds == {} and result.pipelined == {"ns/w-0": "n1"}


def test_reclaim_does_not_pipeline_onto_a_full_node():
    # q2 runs two tasks on a 2-pod node with plenty of cpu; q1's task needs a pod slot.
    other = job("other", queue="q2", phase="Running", tasks=[_running("o-0", "n1"), _running("o-1", "n1")])
    waiting = job("want", queue="q1", tasks=[task("w-0", cpu="1")])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=2)], jobs=[other, waiting])
    result = run(snap, conf("reclaim", [["gang"], ["proportion"]]))
    # q2 is above its deserved (half the cluster): one victim frees the slot, then w-0 is pipelined.
    assert result.evictions == ["ns/o-1"]
    assert result.pipelined == {"ns/w-0": "n1"}


def test_best_effort_preemptor_evicts_best_effort_victims_until_a_slot_frees():
    low = job("low", priority=1, phase="Running", created=1.0, tasks=[
        _running("b-0", "n1", cpu=None), _running("b-1", "n1", cpu=None), _running("c-0", "n1")])
    high = job("high", priority=100, created=2.0, tasks=[task("e-0", cpu=None, memory=None)])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=3)], jobs=[low, high])
    result = run(snap, conf("preempt", [["priority"], ["proportion"]]))
    assert result.evictions == ["ns/b-1"]  # reverse task order: b-1 first; one slot is enough
    assert result.pipelined == {"ns/e-0": "n1"}


def test_best_effort_preemptor_takes_no_resource_victim_for_a_slot():
    low = job("low", priority=1, phase="Running", tasks=[_running("c-0", "n1")])
    high = job("high", priority=100, tasks=[task("e-0", cpu=None, memory=None)])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=1)], jobs=[low, high])
    result = run(snap, conf("preempt", [["priority"], ["proportion"]]))
    assert result.evictions == [] and result.pipelined == {}


def test_node_table_slots_follow_the_task_statuses():
    n = node("a", cpu="8", pods=4)
    for name, status in (("r", "Running"), ("l", "Releasing"), ("p", "Pipelined")):
        n.add_task(task(name, status=status, node="a"))
    t = NodeTable([n])
    # idle: 4 - running - releasing; future: 4 - running - pipelined
    assert (t.idle_pods[0], t.future_pods[0]) == (2, 2)
    n.add_task(task("p2", status="Pipelined", node="a"))
    t.update_placed(n, pipelined=True)
    assert (t.idle_pods[0], t.future_pods[0]) == (2, 1)
    n.add_task(task("a2", status="Allocated", node="a"))
    t.update_placed(n, pipelined=False)
    assert (t.idle_pods[0], t.future_pods[0]) == (1, 0)
    assert t.fit_mask(res("1")).tolist() == [True]
    assert t.fit_mask(res("1"), future=True).tolist() == [False]
    assert not t.fits_row(res("1"), 0, future=True)
    assert t.insufficient(res("1"), future=True) == {"Insufficient pods": 1}
    assert t.insufficient(res("9"), future=True) == {"Insufficient cpu": 1}
    fresh = NodeTable([n])
    for name in ("idle_pods", "future_pods", "pipelined_pods", "releasing_pods"):
        assert getattr(fresh, name).tolist() == getattr(t, name).tolist(), name


def test_a_node_without_a_pods_figure_is_unlimited():
    n = NodeInfo(name="a", allocatable=Resource.from_quantities({"cpu": "2", "memory": "1Gi"}))
    for i in range(3):
        n.add_task(task(f"r{i}", cpu="100m", memory=None, status="Running", node="a"))
    t = NodeTable([n])
    assert np.isinf(t.idle_pods[0]) and t.fit_mask(res("1")).tolist() == [True]


def test_backfill_needs_a_free_slot_without_predicates():
    busy = job("busy", phase="Running", tasks=[_running("r-0", "n1")])
    be = job("be", tasks=[task("b-0", cpu=None, memory=None), task("b-1", cpu=None, memory=None)])
    snap = snapshot(nodes=[node("n1", cpu="8", pods=1), node("n2", cpu="8", pods=1)], jobs=[busy, be])
    result = run(snap, conf("backfill", NO_PREDICATES))
    assert result.binds == {"ns/b-0": "n2"}
    assert result.reasons["ns/be"].message == "0/2 nodes are unavailable: 2 Insufficient pods."


SLOT_ARRAYS = ("pod_count", "idle_pods", "future_pods", "pipelined_pods", "releasing_pods")


def test_slot_columns_equal_a_recount_through_place_evict_and_discard():
    from scheduler_core.framework.session import open_session

    running = [_running(f"r-{i}", "n1") for i in range(3)]
    pending = [task(f"p-{i}", cpu="1") for i in range(4)]
    snap = snapshot(nodes=[node("n1", cpu="8", pods=6), node("n2", cpu="8", pods=2)],
                    jobs=[job("run", phase="Running", tasks=running), job("p", tasks=pending)])
    ssn = open_session(snap, conf("allocate", NO_PREDICATES))
    table = ssn.node_table

    def same() -> None:
        fresh = NodeTable(ssn.nodes.values())
        for name in SLOT_ARRAYS:
            assert getattr(table, name).tolist() == getattr(fresh, name).tolist(), name

    stmt = ssn.statement()
    stmt.evict(running[0], "preempt")
    same()
    stmt.pipeline(pending[0], "n1")
    stmt.allocate(pending[1], "n1")
    stmt.place_run(pending[2:], "n2", pipelined=True)
    same()
    assert (table.idle_pods.tolist(), table.future_pods.tolist()) == ([2, 2], [2, 0])
    stmt.discard()
    same()
    assert (table.idle_pods.tolist(), table.future_pods.tolist()) == ([3, 2], [3, 2])

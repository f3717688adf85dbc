"""NodeTable: row order, resource fit with Volcano's tolerance and Zero default, reasons."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.node_table import NodeTable
from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import node, res, task


def table(*nodes):
    return NodeTable(nodes)


def test_rows_sorted_by_name_and_dims_ordered():
    t = table(node("b", extra={"x/z": 1}), node("a", gpu=2), node("c"))
    assert t.names == ["a", "b", "c"]
    assert t.index == {"a": 0, "b": 1, "c": 2}
    assert t.dims == ["cpu", "memory", "nvidia.com/gpu", "x/z"]
    assert t.allocatable[0].tolist() == [4000, 8 * 2**30, 2000, 0]
    assert t.max_pods.tolist() == [110, 110, 110]


@pytest.mark.parametrize("request_,expected", [
    (res("2"), [True, True, False]),
    (res("2", "6Gi"), [False, True, False]),
    (res(cpu="2000.05m"), [True, True, False]),  # within the 0.1 milli-cpu tolerance
    (res(cpu="2000.2m"), [False, True, False]),
    (res(cpu=None, memory=None), [True, True, True]),  # empty request fits anywhere
    (res("1", gpu=1), [False, True, False]),  # a node without the scalar does not fit
    (res("1", **{"example.com/fpga": 1}), [False, False, False]),  # no node has it
])
def test_fit_mask(request_, expected):
    t = table(node("a", cpu="2", memory="4Gi"), node("b", cpu="4", memory="8Gi", gpu=1),
              node("c", cpu="1", memory="1Gi"))
    assert t.fit_mask(request_).tolist() == expected
    for row, ok in enumerate(expected):
        assert t.fits_row(request_, row) is ok


def test_future_fit_uses_idle_plus_releasing_minus_pipelined():
    n = node("a", cpu="4")
    n.add_task(task("r", cpu="3", memory=None, status=TaskStatus.RELEASING, node="a"))
    n.add_task(task("p", cpu="1", memory=None, status=TaskStatus.PIPELINED, node="a"))
    t = table(n)
    assert t.idle[0, 0] == 1000 and t.future[0, 0] == 3000
    assert t.fit_mask(res("2")).tolist() == [False]
    assert t.fit_mask(res("2"), future=True).tolist() == [True]
    assert t.pod_count.tolist() == [2]


def test_insufficient_counts_each_node_once_first_dimension():
    t = table(node("a", cpu="1", memory="1Gi"), node("b", cpu="8", memory="1Gi"),
              node("c", cpu="8", memory="16Gi"), node("d", cpu="8", memory="16Gi", gpu=1))
    req = res("2", "2Gi", gpu=1)
    assert t.insufficient(req) == {"Insufficient cpu": 1, "Insufficient memory": 1,
                                   "Insufficient nvidia.com/gpu": 1}
    masks = dict(t.insufficient_masks(req))
    assert masks["Insufficient cpu"].tolist() == [True, False, False, False]
    only = np.array([False, True, True, True])
    assert t.insufficient(req, only) == {"Insufficient memory": 1, "Insufficient nvidia.com/gpu": 1}


def test_insufficient_for_scalar_no_node_has():
    t = table(node("a"), node("b", cpu="1"))
    assert t.insufficient(res("2", **{"x/fpga": 1})) == {"Insufficient cpu": 1, "Insufficient x/fpga": 1}


def test_update_row_mirrors_node():
    a, b = node("a"), node("b")
    t = table(a, b)
    b.add_task(task("x", cpu="1", memory="2Gi", status=TaskStatus.RUNNING, node="b"))
    t.update_row(b)
    assert t.idle[1].tolist() == [3000, 6 * 2**30]
    assert t.used[1].tolist() == [1000, 2 * 2**30]
    assert t.idle[0].tolist() == [4000, 8 * 2**30]
    assert t.pod_count.tolist() == [0, 1]


def test_unschedulable_flag():
    t = table(node("a", unschedulable=True), node("b"))
    assert t.schedulable.tolist() == [False, True]


@pytest.mark.parametrize("rows", [[3], [0, 2, 4]])
def test_view_rows_names_nodes_index_and_arrays(rows):
    table = NodeTable([node(f"n{i}", cpu=str(i + 1)) for i in range(5)])
    view = table.view(np.array(rows, dtype=np.intp))
    assert len(view) == len(rows)
    assert view.names == [f"n{r}" for r in rows]
    assert [n.name for n in view.nodes] == view.names
    assert view.index == {f"n{r}": i for i, r in enumerate(rows)}
    assert view.idle[:, 0].tolist() == [1000.0 * (r + 1) for r in rows]
    assert view.all_rows().tolist() == [True] * len(rows)
    with pytest.raises(AttributeError):
        view.no_such_attribute  # noqa: B018


def test_rows_after_allocate_and_pipeline_equal_a_rebuilt_table():
    from scheduler_core.framework.session import open_session
    from tests.scheduler_core.builders import conf, job, snapshot

    nodes = [node("n1", cpu="4", gpu=2), node("n2", cpu="8")]
    running = [task("r", cpu="3", status="Releasing", node="n1")]
    pending = [task("a", cpu="1", gpu=1), task("b", cpu="2"), task("c", cpu="2")]
    snap = snapshot(nodes=nodes, jobs=[job("run", tasks=running, phase="Running"), job("p", tasks=pending)])
    ssn = open_session(snap, conf("allocate", [["predicates"]]))
    ssn.allocate(pending[0], "n1")
    ssn.pipeline(pending[1], "n1")
    ssn.allocate(pending[2], "n2")
    table, fresh = ssn.node_table, NodeTable(ssn.nodes.values())
    for name in ("allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count"):
        assert getattr(table, name).tolist() == getattr(fresh, name).tolist(), name
    assert table.future[0, 0] == 4000 - 3000 - 1000 + 3000 - 2000  # idle + releasing - pipelined


ARRAYS = ("allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count", "max_pods",
          "schedulable")


@pytest.mark.parametrize("rows", [[3], [0, 2, 4]])
def test_view_arrays_are_the_tables_rows(rows):
    nodes = [node(f"n{i}", cpu=str(i + 1), pods=10 + i, gpu=i % 2 or None, unschedulable=i == 2)
             for i in range(5)]
    table = NodeTable(nodes)
    view = table.view(np.array(rows, dtype=np.intp))
    for name in ARRAYS:
        assert getattr(view, name).tolist() == getattr(table, name)[rows].tolist(), name


def test_one_row_view_stays_live_after_the_row_changes():
    nodes = [node("n0", cpu="4"), node("n1", cpu="4")]
    table = NodeTable(nodes)
    view = table.view(np.array([1], dtype=np.intp))
    assert view.idle[0, 0] == 4000.0  # read once: the view now holds a slice of the table
    t = task("t", cpu="1", status="Running", node="n1")
    nodes[1].add_task(t)
    table.update_placed(nodes[1], pipelined=False)
    assert table.view(np.array([1], dtype=np.intp)) is view
    got = (view.idle[0, 0], view.used[0, 0], view.future[0, 0], view.pod_count[0])
    assert got == (3000.0, 1000.0, 3000.0, 1)

"""NodeTable's column-wise build (`_fill_all`) equals filling every row with `_fill`, on random
nodes: scalars on some nodes only, pod limits or none, tasks in every status."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.node_table import NodeTable
from scheduler_core.model import TaskStatus
from tests.conftest import profiled
from tests.scheduler_core.builders import GPU, node, task

ARRAYS = ("allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count", "max_pods",
          "idle_pods", "future_pods", "pipelined_pods", "releasing_pods", "schedulable")
STATUSES = [TaskStatus.RUNNING, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.ALLOCATED,
            TaskStatus.RELEASING, TaskStatus.PIPELINED]

tasks_st = st.lists(st.tuples(st.sampled_from(STATUSES), st.sampled_from(["100m", "1", "0"]), st.booleans()),
                    max_size=5)
nodes_st = st.lists(st.tuples(st.sampled_from(["2", "4", "7500m"]), st.sampled_from([None, "1", "3"]),
                              st.sampled_from([0, 3, 110]), st.booleans(), tasks_st),
                    min_size=0, max_size=6)


def _nodes(spec):
    out = []
    for i, (cpu, gpu, pods, cordoned, tasks) in enumerate(spec):
        n = node(f"n{(i * 7) % 10}-{i}", cpu=cpu, gpu=gpu, pods=pods, unschedulable=cordoned,
                 extra={"example.com/fpga": 1} if i % 3 == 2 else None)
        if pods == 0:
            n.allocatable.max_task_num = 0  # no pods figure: unlimited slots
        for k, (status, cpu_req, with_gpu) in enumerate(tasks):
            empty = cpu_req == "0"  # best-effort
            t = task(f"t{i}-{k}", cpu=None if empty else cpu_req, memory=None if empty else "1Gi",
                     gpu="1" if with_gpu and gpu else None, status=status, node=n.name)
            t.uid = t.name
            n.add_task(t)
        out.append(n)
    return out


@settings(profiled(settings(max_examples=120, deadline=None)))
@given(nodes_st)
def test_the_column_build_equals_the_row_fill(spec):
    table = NodeTable(_nodes(spec))
    rows = NodeTable.__new__(NodeTable)
    rows.__dict__.update({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in table.__dict__.items()})
    for name in ARRAYS:
        arr = getattr(rows, name)
        arr[...] = np.inf if name in ("idle_pods", "future_pods") else (True if name == "schedulable" else 0)
    for i, n in enumerate(rows.nodes):  # the former row-by-row build
        rows.allocatable[i] = rows.vector(n.allocatable)
        rows.max_pods[i] = n.allocatable.max_task_num
        rows.schedulable[i] = not n.unschedulable
        rows._fill(i, n)
    for name in ARRAYS:
        got, want = getattr(table, name), getattr(rows, name)
        assert got.dtype == want.dtype, name
        assert np.array_equal(got, want), (name, got, want)
    assert table.dims[:2] == ["cpu", "memory"] and (GPU in table.dims) == any(s[1] for s in spec)

"""The node table kept across sessions (framework.kept_nodes) equals a fresh build, whatever
happened between two opens: tasks placed, moved, evicted, finished or deleted through their
jobs, placements made and undone inside a session, nodes whose allocatable (pods figure and
scalars included) or cordon the caller replaced, nodes added and removed, whole cycles; and so
does the sum of the nodes' used kept with it (overcommit's pool)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.framework.conf import DEFAULT_CONF_YAML, parse_conf
from scheduler_core.framework.kept import KeptState
from scheduler_core.framework.kept_nodes import KeptNodes, fresh_used, session_table, total_of
from scheduler_core.framework.node_table import NodeTable
from scheduler_core.model import OCCUPYING_STATUSES, ClusterSnapshot, TaskStatus
from scheduler_core.resources import Resource
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.builders import GPU, job, node, queue, replicas, snapshot
from tests.scheduler_core.framework.test_node_table_build import ARRAYS

CONF = parse_conf(DEFAULT_CONF_YAML)
HELD = [TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED,
        TaskStatus.BOUND]


def _cluster() -> ClusterSnapshot:
    jobs = [job(f"j{k}", queue="q", tasks=replicas(f"j{k}-t", 3, cpu="500m"), phase="Inqueue")
            for k in range(4)]
    return snapshot(nodes=[node(f"n{i}", cpu="8", gpu="2" if i == 1 else None) for i in range(4)],
                    queues=[queue("q")], jobs=jobs)


def _held(t) -> bool:
    return t.node_name is not None and (t.status in OCCUPYING_STATUSES or t.status is TaskStatus.PIPELINED)


def _apply(snap: ClusterSnapshot, op: tuple) -> None:
    kind = op[0]
    tasks = [t for j in snap.jobs.values() for t in j.tasks.values()]
    names = sorted(snap.nodes)
    if kind == "place" and tasks:
        t = tasks[op[1] % len(tasks)]
        j = snap.jobs[t.job_uid]
        if _held(t):
            snap.nodes[t.node_name].remove_task(t)
        t.node_name = names[op[2] % len(names)]
        j.update_task_status(t, HELD[op[3] % len(HELD)])
        snap.nodes[t.node_name].add_task(t)
    elif kind == "off" and tasks:
        t = tasks[op[1] % len(tasks)]
        if _held(t):
            snap.nodes[t.node_name].remove_task(t)
        snap.jobs[t.job_uid].update_task_status(t, TaskStatus.PENDING if op[2] else TaskStatus.SUCCEEDED)
        t.node_name = None
    elif kind == "drop_job" and snap.jobs:
        j = list(snap.jobs.values())[op[1] % len(snap.jobs)]
        for t in j.tasks.values():
            if _held(t):
                snap.nodes[t.node_name].remove_task(t)
        del snap.jobs[j.uid]
    elif kind == "submit":
        k = len(snap.jobs) + op[1] * 100
        new = job(f"s{k}", queue="q", tasks=replicas(f"s{k}-t", 2, cpu="1"), phase="Inqueue")
        for t in list(new.tasks.values()):
            new.tasks.pop(t.uid)
            snap.jobs[new.uid] = new
            snap.add_task(t)
    elif kind == "allocatable":  # as the web's incremental load: new objects, idle from used
        n = snap.nodes[names[op[1] % len(names)]]
        quantities = {"cpu": str(op[2]), "memory": "8Gi"}
        if op[3]:
            quantities["pods"] = op[3]
        if op[4]:
            quantities[GPU] = op[4]
        n.allocatable = Resource.from_quantities(quantities)
        n.idle = n.allocatable.clone().sub_without_assert(n.used)
    elif kind == "pods":  # only the pod limit: a new allocatable object, the same idle
        n = snap.nodes[names[op[1] % len(names)]]
        n.allocatable = n.allocatable.clone()
        n.allocatable.max_task_num = op[2]
    elif kind == "cordon":
        n = snap.nodes[names[op[1] % len(names)]]
        n.unschedulable = not n.unschedulable
    elif kind == "node":
        name = f"n{op[1]}"
        old = snap.nodes.get(name)
        if old is None:
            snap.nodes[name] = node(name, cpu="4", gpu="1" if op[1] == 5 else None)
            snap.nodes = dict(sorted(snap.nodes.items()))
        elif not old.tasks:
            del snap.nodes[name]


def _same(kept: NodeTable, total, snap: ClusterSnapshot) -> None:
    fresh = NodeTable(snap.nodes.values())
    assert kept.names == fresh.names and kept.dims == fresh.dims
    assert all(a is b for a, b in zip(kept.nodes, fresh.nodes, strict=True))
    for name in ARRAYS:
        got, want = getattr(kept, name), getattr(fresh, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    want_total = total_of(fresh)
    assert total == want_total and sorted(total.scalars) == sorted(want_total.scalars)


STEP = st.one_of(
    st.tuples(st.just("place"), st.integers(0, 40), st.integers(0, 6), st.integers(0, 4)),
    st.tuples(st.just("off"), st.integers(0, 40), st.booleans()),
    st.tuples(st.just("drop_job"), st.integers(0, 10)),
    st.tuples(st.just("submit"), st.integers(0, 3)),
    st.tuples(st.just("allocatable"), st.integers(0, 6), st.integers(1, 9), st.sampled_from([0, 2, 110]),
              st.sampled_from([None, "1", "4"])),
    st.tuples(st.just("pods"), st.integers(0, 6), st.sampled_from([0, 1, 3])),
    st.tuples(st.just("cordon"), st.integers(0, 6)),
    st.tuples(st.just("node"), st.integers(0, 6)),
    st.tuples(st.just("cycle")),
)


@settings(profiled(settings(max_examples=80, deadline=None)))
@given(st.lists(STEP, min_size=1, max_size=30))
def test_the_kept_table_equals_a_fresh_one_after_any_mix(steps):
    snap = _cluster()
    kept = KeptState()
    kept.lasting = True
    for op in steps:
        if op[0] == "cycle":  # a whole session: its placements touch rows the log may not name
            run_session(snap, CONF, kept=kept)
            settle(snap)
        else:
            _apply(snap, op)
        table, total = session_table(kept, snap.nodes, snap.jobs)
        _same(table, total, snap)
        used, want = table.kept_from.used_total(snap.nodes), fresh_used(snap.nodes)
        assert used == want and sorted(used.scalars) == sorted(want.scalars)
        if len(table):  # the session's copy is its own: moving it leaves the kept rows alone
            table.idle[0, 0] = -1.0


def test_only_the_named_rows_are_refilled():
    snap = _cluster()
    kept = KeptState()
    kept.lasting = True
    session_table(kept, snap.nodes, snap.jobs)
    part = kept.parts["node_table"]
    assert isinstance(part, KeptNodes) and part.rebuilt == 1
    session_table(kept, snap.nodes, snap.jobs)
    assert part.refilled == 0
    _apply(snap, ("place", 0, 2, 0))  # one task onto n2
    table, total = session_table(kept, snap.nodes, snap.jobs)
    assert part.refilled == 1 and part.rebuilt == 1
    _same(table, total, snap)
    _apply(snap, ("node", 7))  # a new node: the rows themselves change
    session_table(kept, snap.nodes, snap.jobs)
    assert part.rebuilt == 2


def test_a_state_that_keeps_no_answers_builds_afresh():
    snap = _cluster()
    kept = KeptState()  # not lasting, first session
    session_table(kept, snap.nodes, snap.jobs)
    assert "node_table" not in kept.parts

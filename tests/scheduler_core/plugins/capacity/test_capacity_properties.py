"""Properties of the hierarchical capacity tree on random queue trees and random events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.session import Event, open_session
from scheduler_core.resources import MIN_RESOURCE
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

# queue i's parent is one of the queues before it (or root), so the tree has no cycle
queue_st = st.tuples(st.integers(0, 100), st.one_of(st.none(), st.integers(0, 40)),
                     st.one_of(st.none(), st.integers(1, 60)), st.integers(0, 10))


@settings(max_examples=60, deadline=None)
@given(st.lists(queue_st, min_size=1, max_size=12), st.data())
def test_tree_invariants(spec: list[tuple[int, int | None, int | None, int]], data: st.DataObject) -> None:
    queues = []
    for i, (parent_pick, deserved, cap, guar) in enumerate(spec):
        parent = "root" if i == 0 or parent_pick % (i + 1) == i else f"q{parent_pick % i}"
        queues.append(queue(f"q{i}", parent,
                            deserved={"cpu": str(deserved)} if deserved is not None else None,
                            capability={"cpu": str(cap)} if cap is not None else None,
                            guarantee={"cpu": str(guar)} if guar else None))
    parents = {q.name: q.parent for q in queues}
    leaves = sorted(n for n in parents if n not in parents.values())
    jobs = [job(f"j-{leaf}", leaf, [task(f"{leaf}-{k}", cpu="1", memory="1Gi") for k in range(3)])
            for leaf in leaves]
    snap = snapshot(nodes=[node("n1", cpu="64", memory="256Gi")], queues=queues, jobs=jobs)
    ssn = open_session(snap, conf("allocate", [[{"name": "capacity", "enableHierarchy": True}]]))
    cp = ssn.plugins["capacity"]
    opts = cp.queue_opts
    eps = MIN_RESOURCE
    for name, attr in opts.items():
        g = attr.guarantee.milli_cpu
        assert attr.deserved.milli_cpu >= g - eps
        assert attr.deserved.milli_cpu <= max(attr.real_capability.milli_cpu, g) + eps
        if name != "root":
            parent = opts[attr.ancestors[-1]]
            assert attr.real_capability.milli_cpu <= max(parent.real_capability.milli_cpu, g) + eps
            assert attr.real_capability.milli_cpu <= attr.capability.milli_cpu + eps
    # random allocate/deallocate events keep every parent's allocated = sum of its children's
    tasks = [t for j in ssn.jobs.values() for t in j.tasks.values()]
    placed: set[str] = set()
    for idx in data.draw(st.lists(st.integers(0, len(tasks) - 1), max_size=20)):
        t = tasks[idx]
        if t.uid in placed:
            cp.on_deallocate(Event(t))
            placed.discard(t.uid)
        else:
            cp.on_allocate(Event(t))
            placed.add(t.uid)
    for attr in opts.values():
        if attr.children:
            total = sum(opts[c].allocated.milli_cpu for c in attr.children)
            assert abs(attr.allocated.milli_cpu - total) < eps
    assert abs(opts["root"].allocated.milli_cpu - 1000 * len(placed)) < eps

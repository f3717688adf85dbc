"""capacity's kept hierarchy (plugins/capacity/kept_tree.py) equals a fresh build, whatever happened.

Two identical snapshots live through the same random mix of submits, cancels, completions,
node changes, queue edits and cycles: one opens every session with its kept state, the other
builds from scratch (kept=False). After every step the opened tree (every attr figure, the
explanations, warnings and broken queues) must be equal and every cycle's result identical.
Then exact counts: an unchanged cycle rebuilds and refills nothing and walks no verdict.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.kept import KeptState, kept_state
from scheduler_core.framework.session import open_session
from scheduler_core.model import ClusterSnapshot, QueueState
from scheduler_core.plugins.util.votes import PERMIT, REJECT
from scheduler_core.resources import Resource
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.builders import job, node, queue, replicas, snapshot, task
from tests.scheduler_core.framework import test_kept_state as kept_state_test

CAPACITY = kept_state_test.CAPACITY
QUEUES = ["a1", "a2", "b1", "b"]  # b: a parent (its jobs count nowhere) until b1 moves away
PARENTS = [None, "a", "b", "a1", "zz", "b1"]  # zz: missing (root); a1 / b1 can make cycles


def _cluster() -> ClusterSnapshot:
    queues = [queue("a", deserved={"cpu": "8"}), queue("b", deserved={"cpu": "4"}),
              queue("a1", parent="a", deserved={"cpu": "4"}),
              queue("a2", parent="a", deserved={"cpu": "4"}, capability={"cpu": "6"}),
              queue("b1", parent="b", deserved={"cpu": "4"}, guarantee={"cpu": "1"})]
    return snapshot(nodes=[node(f"n{i}", cpu="4") for i in range(3)], queues=queues)


def _value(v: Any) -> Any:
    return (v.to_quantities(), sorted(v.scalars), v.max_task_num) if isinstance(v, Resource) else v


def opened_tree(snap: ClusterSnapshot, kept: KeptState | None) -> dict[str, Any]:
    """Open a session (not run) and read capacity's tree as plain values."""
    ssn = open_session(snap, CAPACITY, kept=kept)
    plugin = ssn.plugins["capacity"]
    tree = plugin.tree
    out = {"attrs": {q: {k: _value(getattr(a, k)) for k in a.__dataclass_fields__}
                     for q, a in plugin.queue_opts.items()},
           "order": list(plugin.queue_opts), "broken": dict(tree.broken), "warnings": list(tree.warnings),
           "explanations": json.dumps(tree.explanations, sort_keys=True)}
    ssn.release()
    return out


class Twin(kept_state_test.Twin):
    """test_kept_state's twin (submits, cancels, completions, node changes) on this cluster, with
    queue edits as well, always under the hierarchical capacity conf."""

    def __init__(self) -> None:
        self.snap, self.conf, self.seq = _cluster(), CAPACITY, 0

    def apply(self, op: tuple) -> None:
        if op[0] == "queue":
            self._edit(op)
        else:
            super().apply(op)

    def _edit(self, op: tuple) -> None:
        _, name, what, amount = op
        queues = self.snap.queues
        q = queues.get(name)
        if q is None:  # (re)created, under a
            queues[name] = queue(name, parent="a", deserved={"cpu": str(amount)})
        elif what == "parent":
            q.parent = PARENTS[amount % len(PARENTS)]
        elif what == "capability":  # in place: the kept tree compares values, not objects
            if q.capability is None:
                q.capability = Resource.from_quantities({"cpu": str(amount)})
            else:
                q.capability.milli_cpu = amount * 1000.0
        elif what == "deserved":  # a new object
            q.deserved = Resource.from_quantities({"cpu": str(amount), "memory": f"{amount}Gi"})
        elif what == "guarantee":
            q.guarantee = None if q.guarantee is not None else Resource.from_quantities({"cpu": str(amount)})
        elif what == "state":
            q.state = QueueState.CLOSED if q.state is QueueState.OPEN else QueueState.OPEN
        elif what == "delete" and not any(j.queue == name for j in self.snap.jobs.values()):
            del queues[name]


STEP = kept_state_test.steps(
    QUEUES,
    st.tuples(st.just("queue"), st.sampled_from(["a", "a1", "a2", "b", "b1", "c1"]),
              st.sampled_from(["parent", "capability", "deserved", "guarantee", "state", "delete"]),
              st.integers(1, 9)),
    st.tuples(st.just("cycle")),  # with steps' own: cycles twice as often
)


@settings(profiled(settings(max_examples=80, deadline=None)))
@given(st.lists(STEP, min_size=6, max_size=40))
def test_the_kept_tree_equals_a_fresh_build_after_any_mix(steps):
    kept, fresh = Twin(), Twin()
    for op in steps:
        if op[0] == "cycle":
            assert kept.cycle(kept=True) == fresh.cycle(kept=False)
        else:
            kept.apply(op)
            fresh.apply(op)
        assert opened_tree(kept.snap, kept_state(kept.snap)) == opened_tree(fresh.snap, None)


def _saturated() -> ClusterSnapshot:
    """a2 holds its whole capability (running); jobs wait in a1 (refused at a) and a2 (at a2)."""
    queues = [queue("a", capability={"cpu": "4"}), queue("a1", parent="a"),
              queue("a2", parent="a", capability={"cpu": "4"}), queue("b"), queue("b1", parent="b")]
    running = job("r", queue="a2", tasks=[task("r-0", cpu="4", status="Running", node="n0")], phase="Running",
                  min_resources={"cpu": "4"})  # no elastic part: its 4 cpu count against a and a2
    waiting = [job(f"w{i}", queue=q, tasks=replicas(f"w{i}", 1, cpu="1"), min_resources={"cpu": "1"},
                   phase="Pending") for i, q in enumerate(["a1", "a1", "a2"])]
    return snapshot(nodes=[node("n0", cpu="8"), node("n1", cpu="8")], queues=queues, jobs=[running, *waiting])


def _part(snap: ClusterSnapshot):
    return kept_state(snap).parts["capacity.tree"]


def test_an_unchanged_cycle_rebuilds_refills_and_walks_nothing():
    snap = _saturated()
    results = [run_session(snap, CAPACITY) for _ in range(4)]
    part = _part(snap)
    assert part.rebuilt == 1
    assert part.refilled == set()
    walks = part.memos.verdicts.walks
    run_session(snap, CAPACITY)
    assert (part.rebuilt, part.refilled, part.memos.verdicts.walks) == (1, set(), walks)
    # Every waiting job is still refused, with the same record.
    assert results[-1].reasons == run_session(snap, CAPACITY, kept=False).reasons
    assert {uid for uid, r in results[-1].reasons.items()} >= {"ns/w0", "ns/w1", "ns/w2"}


def test_a_submit_refills_its_leaf_and_ancestors_only():
    snap = _saturated()
    for _ in range(3):
        run_session(snap, CAPACITY)
    extra = job("x", queue="b1", tasks=replicas("x", 1, cpu="1"), phase="Pending")
    for t in list(extra.tasks.values()):
        extra.tasks.pop(t.uid)
        snap.jobs[extra.uid] = extra
        snap.add_task(t)
    open_session(snap, CAPACITY, kept=kept_state(snap)).release()
    part = _part(snap)
    assert (part.rebuilt, part.refilled) == (1, {"b1", "b", "root"})


def test_a_queue_edit_rebuilds_the_structure_once():
    snap = _saturated()
    for _ in range(3):
        run_session(snap, CAPACITY)
    snap.queues["a"].capability.milli_cpu = 6000.0  # in place
    run_session(snap, CAPACITY)
    assert _part(snap).rebuilt == 2
    run_session(snap, CAPACITY)
    assert _part(snap).rebuilt == 2
    snap.nodes["n2"] = node("n2", cpu="8")  # the cluster total is part of the structure
    run_session(snap, CAPACITY)
    assert _part(snap).rebuilt == 3


def test_a_kept_refusal_is_looked_up_and_moves_with_its_queue():
    snap = _saturated()
    run_session(snap, CAPACITY)
    part = _part(snap)
    assert part.memos.verdicts.walks == 2  # (a1, cpu 1) refused at a, (a2, cpu 1) at a2
    run_session(snap, CAPACITY)
    assert part.memos.verdicts.walks == 2  # both looked up
    for name in ("a", "a2"):
        snap.queues[name].capability.milli_cpu = 5000.0  # one cpu of room under a
    result = run_session(snap, CAPACITY)
    assert part.memos.verdicts.walks > 2
    assert list(result.binds) == ["ns/w0-0"]
    assert result.reasons["ns/w2"].message.startswith("queue a resource quota insufficient")


def test_what_a_session_moved_is_not_trusted_at_the_next_open():
    snap = _saturated()
    snap.queues["a"].capability.milli_cpu = 6000.0  # two cpu of room under a, for a1's jobs
    w0, w1 = snap.jobs["ns/w0"], snap.jobs["ns/w1"]
    ssn = open_session(snap, CAPACITY, kept=kept_state(snap))
    plugin = ssn.plugins["capacity"]
    assert plugin.job_enqueueable(w0) == PERMIT
    plugin.job_enqueued(w0)
    plugin.job_enqueued(w1)  # a is full within this session only (the jobs are not changed)
    assert plugin.job_enqueueable(w0) == REJECT
    ssn.release()
    # Nothing changed for the next open: its figures are the template's, not the ones the last
    # session left, so the answer memoised after those moves must not come back.
    ssn = open_session(snap, CAPACITY, kept=kept_state(snap))
    assert _part(snap).refilled == set()
    assert ssn.plugins["capacity"].job_enqueueable(w0) == PERMIT
    ssn.release()

"""Plugin figures kept across sessions (framework.kept) equal a fresh build, whatever happened.

Two identical snapshots live through the same random mix of submits, cancels, completions,
node changes and cycles: one opens every session with its kept state, the other builds from
scratch (kept=False). After every step the opened plugins' queue figures must be equal, and
every cycle's result identical.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.framework.conf import DEFAULT_CONF_YAML, parse_conf
from scheduler_core.framework.kept import kept_state
from scheduler_core.model import OCCUPYING_STATUSES, ClusterSnapshot, TaskStatus
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, queue, replicas, snapshot
from tests.scheduler_core.kept_figures import opened_figures

PROPORTION = parse_conf(DEFAULT_CONF_YAML)
CAPACITY = parse_conf(DEFAULT_CONF_YAML.replace(
    "      - name: proportion\n", "      - name: capacity\n        enableHierarchy: true\n"))
QUEUES = ["a1", "a2", "b1"]


def _cluster() -> ClusterSnapshot:
    queues = [queue("a", deserved={"cpu": "8"}), queue("b", deserved={"cpu": "4"}),
              queue("a1", parent="a", deserved={"cpu": "4"}), queue("a2", parent="a", deserved={"cpu": "4"},
                                                                   capability={"cpu": "6"}),
              queue("b1", parent="b", deserved={"cpu": "4"}, guarantee={"cpu": "1"})]
    return snapshot(nodes=[node(f"n{i}", cpu="4") for i in range(3)], queues=queues)


class Twin:
    """One snapshot and the steps applied to it (the same steps give the same objects' values)."""

    def __init__(self, conf) -> None:
        self.snap, self.conf, self.seq = _cluster(), conf, 0

    def apply(self, op: tuple) -> None:
        snap, kind = self.snap, op[0]
        if kind == "submit":
            _, q, n, cpu, gang = op
            self.seq += 1
            name = f"j{self.seq}"
            j = job(name, queue=q, tasks=replicas(name, n, cpu=str(cpu)), min_available=n if gang else 1,
                    min_resources={"cpu": str(cpu * n)} if gang else None, phase="Pending")
            for t in list(j.tasks.values()):
                j.tasks.pop(t.uid)
                snap.jobs[j.uid] = j
                snap.add_task(t)
        elif kind in ("cancel", "complete") and snap.jobs:
            j = list(snap.jobs.values())[op[1] % len(snap.jobs)]
            for t in list(j.tasks.values()):
                on_node = t.node_name is not None and (t.status in OCCUPYING_STATUSES
                                                       or t.status is TaskStatus.PIPELINED)
                if on_node:
                    snap.nodes[t.node_name].remove_task(t)
                if kind == "complete" and t.status is TaskStatus.RUNNING:
                    j.update_task_status(t, TaskStatus.SUCCEEDED)
            if kind == "cancel":
                del snap.jobs[j.uid]
        elif kind == "node":
            _, i, cpu = op
            name = f"n{i}"
            old = snap.nodes.get(name)
            if old is None:
                snap.nodes[name] = node(name, cpu=str(cpu))
                snap.nodes = dict(sorted(snap.nodes.items()))
            elif not old.tasks:
                del snap.nodes[name]
            else:
                old.unschedulable = not old.unschedulable

    def cycle(self, kept: bool) -> str:
        result = run_session(self.snap, self.conf, kept=None if kept else False)
        settle(self.snap)
        data = result.to_json()
        data.pop("timing", None)
        return json.dumps(data, sort_keys=True, default=str)


def steps(queues: list[str], *more: st.SearchStrategy) -> st.SearchStrategy:
    """Twin.apply's steps (submits into `queues`, cancels, completions, node changes), then `more`
    (other steps, or more weight for one), then a cycle."""
    return st.one_of(
        st.tuples(st.just("submit"), st.sampled_from(queues), st.integers(1, 4), st.integers(1, 3),
                  st.booleans()),
        st.tuples(st.just("cancel"), st.integers(0, 50)),
        st.tuples(st.just("complete"), st.integers(0, 50)),
        st.tuples(st.just("node"), st.integers(0, 4), st.integers(2, 8)),
        *more,
        st.tuples(st.just("cycle")),
    )


STEP = steps(QUEUES)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["proportion", "capacity"]), st.booleans(), st.lists(STEP, min_size=1, max_size=25))
def test_kept_figures_equal_a_fresh_build_after_any_mix(which, lasting, steps):
    conf = PROPORTION if which == "proportion" else CAPACITY
    kept, fresh = Twin(conf), Twin(conf)
    # A lasting state (the caller keeps the snapshot) keeps answers from its first session on.
    kept_state(kept.snap).lasting = lasting
    for op in steps:
        if op[0] == "cycle":
            assert kept.cycle(kept=True) == fresh.cycle(kept=False)
        else:
            kept.apply(op)
            fresh.apply(op)
        ours = opened_figures(kept.snap, conf, kept_state(kept.snap))
        assert ours == opened_figures(fresh.snap, conf, None)


def test_an_unchanged_cluster_recomputes_no_job():
    twin = Twin(PROPORTION)
    for q in QUEUES:
        twin.apply(("submit", q, 2, 1, False))
    seen = []
    for _ in range(5):
        twin.cycle(kept=True)
        seen.append(kept_state(twin.snap).parts["proportion.job_sums"].recomputed)
    # The first open computes every job; the next one sees the binds, the third the jobs turned
    # Running at the second close; then nothing moves.
    assert seen == [3, 3, 3, 0, 0]
    twin.apply(("submit", "a1", 1, 1, False))
    twin.cycle(kept=True)
    assert kept_state(twin.snap).parts["proportion.job_sums"].recomputed == 1

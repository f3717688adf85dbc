"""allocate under the feasible-node search limit: the cached class states (change log, lazy
re-verification, failure memo, runs) decide as a placer that rebuilds every state from scratch
for every task, and the rotating index is the caller's across sessions."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.framework.node_search import NodeScan, SearchOptions
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.actions.allocate.test_allocate_runs import CONFIGS, build_world, result_json, worlds
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot

# 2 to 4 nodes keep 1 or 2 feasible nodes per task: the scan window matters on every try.
LIMITED = SearchOptions(minimum_feasible_nodes=1, percentage_nodes_to_find=50)


def fresh_best(self: Placer, task):
    """Placer.best with a class state built from scratch for every task (no cache, no memo)."""
    from scheduler_core.actions.allocate.placement import ClassState

    state = ClassState(self.ssn, task, self._dynamic, self._log)
    self._asked = (task, state)
    choice = state.best(self._search)
    if choice is None:
        self._failed[self.class_key(task)] = (-1, state.errors())  # never a memo hit
    return choice


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(profiled(settings(max_examples=60)))
@given(world=worlds)
def test_cached_placement_under_the_limit_decides_as_from_scratch(name, world):
    cfg = dataclasses.replace(conf("enqueue, allocate, backfill", CONFIGS[name]), options=LIMITED)
    hierarchy = name == "hierarchy"
    scan = NodeScan()
    cached = result_json(run_session(build_world(world, hierarchy), cfg, node_scan=scan))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Placer, "best", fresh_best)
        m.setattr(AllocateAction, "runs", False)
        again = NodeScan()
        scratch = result_json(run_session(build_world(world, hierarchy), cfg, node_scan=again))
    assert cached == scratch
    assert scan == again


def test_the_index_is_kept_across_sessions_by_the_caller():
    # 4 equal nodes, K = 2: each task's scan keeps 2 nodes and stops at the 3rd.
    cfg = dataclasses.replace(conf("enqueue, allocate", [["gang"], ["predicates", "nodeorder"]]),
                              options=LIMITED)

    def one_task():
        return snapshot(nodes=[node(f"n{i}") for i in range(4)],
                        jobs=[job("j", tasks=replicas("t", 1), phase="Inqueue")])

    scan = NodeScan()
    binds = [run_session(one_task(), cfg, node_scan=scan).binds["ns/t-0"] for _ in range(3)]
    # Scans: n0 n1 (stops at n2); n3 n0 (stops at n1): the tie goes to n0; n2 n3 (stops at n0).
    assert binds == ["n0", "n0", "n2"]
    assert scan.next_index == 1
    fresh = [run_session(one_task(), cfg).binds["ns/t-0"] for _ in range(2)]
    assert fresh == ["n0", "n0"]  # without a kept index every session starts at the first node

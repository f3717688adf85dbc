"""allocate's recorded tries come from its class figures, once per class (explain.class_scores):
they equal a recomputation from scratch for every task (fresh predicates, fits, scores and
per-plugin parts, tasks placed one by one) on random small clusters, runs on."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.allocate.placement import ClassState, has_dynamic_predicates
from scheduler_core.explain import session_hooks
from scheduler_core.explain.class_scores import run_entries
from scheduler_core.explain.node_scores import NodeScore, ScoreRecorder
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.actions.allocate.test_allocate_runs import CONFIGS, build_world, worlds
from tests.scheduler_core.builders import conf


class Recompute(ScoreRecorder):
    """Each allocate try ranked and broken down from a class state built afresh for the task."""

    def record_class(self, task: Any, state: Any, choice: Any, log: Any, cache: Any) -> None:
        if choice is None:
            self.record_none(task, "allocate")
            return
        fresh = ClassState(self.ssn, task, has_dynamic_predicates(self.ssn))
        rows = self._ranked(fresh.best_idle, fresh.best_future)
        pipes = np.arange(len(rows)) >= np.count_nonzero(fresh.best_idle[rows] > -np.inf)
        totals = np.where(pipes, fresh.best_future[rows], fresh.best_idle[rows])
        parts = self.ssn.node_score_parts(task, fresh.ok & fresh.future_fit, rows)
        self.record(task, "allocate", rows, totals, parts, pipes)


def same_scores(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Equal tries: nodes, flags and actions exactly, figures to float noise (the vectorised and
    the one-row paths of a plugin may differ in the last bits)."""
    assert list(got) == list(want)
    for uid, g in got.items():
        w = want[uid]
        assert (g.action, g.chosen, g.pipelined) == (w.action, w.chosen, w.pipelined), uid
        pairs = list(zip(g.top, w.top, strict=True))
        if g.chosen_scores is not None or w.chosen_scores is not None:
            pairs.append((g.chosen_scores, w.chosen_scores))
        for a, b in pairs:
            assert (a.node, a.pipelined, list(a.plugins)) == (b.node, b.pipelined, list(b.plugins)), uid
            assert math.isclose(a.total, b.total, rel_tol=1e-9, abs_tol=1e-9), uid
            assert all(math.isclose(a.plugins[p], b.plugins[p], rel_tol=1e-9, abs_tol=1e-9)
                       for p in a.plugins), uid


@pytest.mark.parametrize("name", ["binpack", "default", "least", "proportional"])
@settings(profiled(settings(max_examples=60)))
@given(world=worlds)
def test_class_records_equal_per_task_recomputation(name, world):
    cfg = conf("enqueue, allocate, backfill", CONFIGS[name])
    got = run_session(build_world(world), cfg, record_scores=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(session_hooks, "ScoreRecorder", Recompute)
        m.setattr(AllocateAction, "runs", False)
        want = run_session(build_world(world), cfg, record_scores=True)
    assert (got.binds, got.pipelined) == (want.binds, want.pipelined)
    same_scores(got.node_scores, want.node_scores)


def test_a_run_copy_puts_the_row_among_the_idle_fits_by_total() -> None:
    a, b, c = NodeScore("a", 9.0, {}), NodeScore("b", 5.0, {}), NodeScore("c", 7.0, {}, pipelined=True)
    assert run_entries([a, b, c], NodeScore("a", 4.0, {}), 3) == [b, NodeScore("a", 4.0, {}), c]
    assert run_entries([a, b, c], NodeScore("a", 6.0, {}), 2) == [NodeScore("a", 6.0, {}), b]

"""A finished session frees its snapshot by reference counting, not the cyclic collector.

Plugins and their callbacks point back at the session, and the node table's cached row views
at the table: unless run_session breaks those cycles, the whole session (every job, task and
node) waits for a full collection, ~140 ms on size M, paid by whatever runs next.
"""

from __future__ import annotations

import gc

import pytest

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import conf_of, to_snapshot
from scheduler_core.scheduler import run_session


@pytest.mark.parametrize("scenario", ["fill", "contention"])
def test_a_finished_session_leaves_nothing_for_the_cyclic_collector(scenario):
    world = build_world("S", scenario, 1)
    conf = conf_of(world.spec)
    # Once first: lazily imported modules leave garbage of their own (a dataclass(slots=True)
    # replaces its first class object), once per process, not per session.
    run_session(to_snapshot(world.spec), conf)
    snapshot = to_snapshot(world.spec)
    gc.collect()
    gc.disable()
    try:
        result = run_session(snapshot, conf)
        del snapshot
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
    assert len(result.binds) + len(result.evictions) > 0  # the session did place or evict

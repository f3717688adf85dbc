"""run_session pauses the cyclic GC and always restores the caller's setting."""

from __future__ import annotations

import gc

import pytest

from scheduler_core.scheduler import gc_paused, run_session
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_state_is_restored_after_success_and_error(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), gc_paused():
            raise RuntimeError("boom")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_run_session_leaves_gc_enabled_and_binds():
    snap = snapshot(nodes=[node("n1")], jobs=[job("j", tasks=replicas("w", 2, cpu="1"), min_available=2)])
    result = run_session(snap, conf("allocate", [["gang"], ["predicates", "nodeorder"]]))
    assert gc.isenabled()
    assert result.binds == {"ns/w-0": "n1", "ns/w-1": "n1"}

"""backfill: only best-effort tasks of admitted jobs, on nodes whose predicates pass."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

TIERS = [["priority", "gang"], ["predicates"]]


def _be(name: str, **kw):
    return task(name, cpu=None, memory=None, **kw)


@pytest.mark.parametrize(("nodes", "jobs", "binds"), [
    pytest.param([node("n1")], [job("j1", tasks=[_be("be"), task("t", cpu="1")])],
                 {"ns/be": "n1"}, id="best-effort-only"),
    pytest.param([node("n1")], [job("j1", phase="Pending", tasks=[_be("be")])],
                 {}, id="pending-job-skipped"),
    pytest.param([node("n1", cpu="1", memory="1Gi")],  # a full node still takes best-effort pods
                 [job("full", tasks=[task("r", cpu="1", memory="1Gi", status="Running", node="n1")]),
                  job("j1", tasks=[_be("be")])],
                 {"ns/be": "n1"}, id="full-node-ok"),
    pytest.param([node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})],
                 [job("j1", tasks=[_be("be", node_selector={"zone": "b"})])],
                 {"ns/be": "n2"}, id="predicates-apply"),
    pytest.param([node("n1", pods=1), node("n2", pods=1)],
                 [job("j1", tasks=[_be("a"), _be("b"), _be("c")])],
                 {"ns/a": "n1", "ns/b": "n2"}, id="pod-count-limit"),
])
def test_backfill(nodes, jobs, binds):
    result = run(snapshot(nodes=nodes, jobs=jobs), conf("backfill", TIERS))
    assert result.binds == binds
    assert result.pipelined == {}
    assert result.evictions == []


def test_backfill_after_allocate_places_both_kinds():
    snap = snapshot(nodes=[node("n1", cpu="1")],
                    jobs=[job("j1", tasks=[task("t", cpu="1"), _be("be")])])
    result = run(snap, conf("allocate, backfill", TIERS))
    assert result.binds == {"ns/t": "n1", "ns/be": "n1"}

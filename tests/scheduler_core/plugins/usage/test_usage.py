"""usage: thresholds as a predicate, free-share score, stale metrics ignored."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

NOW = 10_000.0


def busy(name, cpu, memory, age=0.0):
    """A node reporting usage percentages `age` seconds before NOW."""
    return node(name, usage={"cpu": cpu, "memory": memory}, usage_time=NOW - age)


NODES = [
    busy("a-hot-cpu", 90, 10),
    busy("b-hot-mem", 10, 85),
    busy("c-calm", 20, 40),
    busy("d-stale", 99, 99, age=301),        # older than 5 minutes: ignored
    busy("e-fresh-edge", 80, 80, age=300),   # at both thresholds: passes
    node("f-no-metrics"),
]


def session(args=None):
    plugin = {"name": "usage", "arguments": args} if args else {"name": "usage"}
    j = job("j", tasks=[task("t")])
    return open_session(snapshot(nodes=NODES, jobs=[j], now=NOW), conf("allocate", [[plugin]])), j


@pytest.mark.parametrize("args,ok,counts", [
    (None, [False, False, True, True, True, True],
     {"node(s) had cpu usage above 80%": 1, "node(s) had memory usage above 80%": 1}),
    ({"thresholds": {"cpu": 95, "mem": 95}}, [True, True, True, True, True, True], {}),
    ({"thresholds": {"cpu": 15, "memory": 30}}, [False, False, False, True, False, True],
     {"node(s) had cpu usage above 15%": 3, "node(s) had memory usage above 30%": 1}),
])
def test_predicate_thresholds(args, ok, counts):
    ssn, j = session(args)
    res = ssn.predicate(next(iter(j.tasks.values())))
    assert res.ok_mask.tolist() == ok
    assert res.counts() == counts


def test_scores_by_free_share_with_weights():
    ssn, j = session()
    scores = ssn.node_scores(next(iter(j.tasks.values())), np.ones(len(NODES), dtype=bool))
    # default weights: ((100-cpu)/100 + (100-mem)/100) / 2 * 100 * 5
    assert scores.tolist() == pytest.approx([250.0, 262.5, 350.0, 0.0, 100.0, 0.0])
    ssn, j = session({"usage.weight": 1, "cpu.weight": 3, "memory.weight": 1})
    scores = ssn.node_scores(next(iter(j.tasks.values())), np.ones(len(NODES), dtype=bool))
    assert scores.tolist() == pytest.approx([(0.1 * 3 + 0.9) / 4 * 100, (0.9 * 3 + 0.15) / 4 * 100,
                                             (0.8 * 3 + 0.6) / 4 * 100, 0.0, 20.0, 0.0])


def test_allocate_prefers_the_least_used_node():
    nodes = [busy("n1", 70, 70), busy("n2", 30, 20), busy("n3", 85, 10)]
    snap = snapshot(nodes=nodes, jobs=[job("j", tasks=[task("t")])], now=NOW)
    result = run(snap, conf("allocate", [["usage"]]))
    assert result.binds == {"ns/t": "n2"}


def test_stale_metrics_everywhere_means_no_filter_and_name_order():
    nodes = [busy("n1", 99, 99, age=3600), busy("n2", 1, 1, age=3600)]
    snap = snapshot(nodes=nodes, jobs=[job("j", tasks=[task("t")])], now=NOW)
    assert run(snap, conf("allocate", [["usage"]])).binds == {"ns/t": "n1"}

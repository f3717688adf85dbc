"""nodeorder: kube score formulas on hand-computed rows, argument weights, affinity and taints."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.nodeorder.nodeorder import (
    NodeOrderPlugin,
    balanced_resource,
    least_requested,
    most_requested,
    taint_toleration_scores,
)
from tests.scheduler_core.builders import conf, job, node, snapshot, task

GI = 2**30

# (requested cpu milli, requested memory bytes, allocatable cpu, allocatable memory) -> score
FORMULAS = [
    # cpu 2 of 4 and memory 1Gi of 8Gi (after adding the task)
    ("least", (2000, 1 * GI, 4000, 8 * GI), 68),  # (50 + 87) // 2
    ("most", (2000, 1 * GI, 4000, 8 * GI), 31),  # (50 + 12) // 2
    ("balanced", (2000, 1 * GI, 4000, 8 * GI), 81),  # (1 - |0.5 - 0.125| / 2) * 100 = 81.25
    ("least", (0, 0, 4000, 8 * GI), 100),
    ("most", (4000, 8 * GI, 4000, 8 * GI), 100),
    ("least", (5000, 1 * GI, 4000, 8 * GI), 43),  # cpu over capacity scores 0: (0 + 87) // 2
    ("most", (5000, 1 * GI, 4000, 8 * GI), 56),  # cpu capped at capacity: (100 + 12) // 2
    ("balanced", (5000, 1 * GI, 4000, 8 * GI), 56),  # fraction capped at 1: (1 - 0.875/2) = 56.25
    ("least", (1000, 1 * GI, 4000, 0), 75),  # zero allocatable memory is skipped
    ("least", (1000, 1 * GI, 0, 0), 0),
    ("balanced", (1000, 1 * GI, 4000, 0), 100),  # one dimension left: std 0
]
FNS = {"least": least_requested, "most": most_requested, "balanced": balanced_resource}


@pytest.mark.parametrize("kind,row,expected", FORMULAS)
def test_formula(kind, row, expected):
    req = np.array([[row[0], row[1]]], dtype=float)
    alloc = np.array([[row[2], row[3]]], dtype=float)
    assert FNS[kind](req, alloc).tolist() == [expected]


@pytest.mark.parametrize(
    "counts,expected",
    [
        ([0, 0, 0], [100, 100, 100]),
        ([0, 1, 2], [100, 50, 0]),
        ([0, 1, 3], [100, 67, 0]),  # 100 - 100 // 3
    ],
)
def test_taint_toleration_normalisation(counts, expected):
    assert taint_toleration_scores(np.array(counts, dtype=float)).tolist() == expected


def _scores(args, nodes, t, running=()):
    jobs = [job("j", tasks=[t])]
    if running:
        jobs.append(job("r", tasks=list(running), phase="Running"))
    ssn = open_session(
        snapshot(nodes=nodes, jobs=jobs), conf("allocate", [[{"name": "nodeorder", "arguments": args}]])
    )
    return ssn.node_scores(t, ssn.node_table.all_rows()).tolist()


OFF = {
    "leastrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "tainttoleration.weight": 0,
}


@pytest.mark.parametrize(
    "args,expected",
    [
        # n2 (empty) ends at cpu 1/4 and memory 512Mi/8Gi: least (75 + 93) // 2 = 84,
        # most (25 + 6) // 2 = 15, balanced (1 - (0.25 - 0.0625) / 2) * 100 = 90.6 -> 90.
        ({}, [68 + 81 + 3 * 100, 84 + 90 + 3 * 100]),  # defaults: least 1, balanced 1, taints 3
        ({**OFF, "leastrequested.weight": 2}, [136, 168]),
        ({**OFF, "mostrequested.weight": 3}, [93, 45]),
        ({**OFF, "balancedresource.weight": "2"}, [162, 180]),
    ],
)
def test_weights_from_arguments(args, expected):
    # n1 runs 1 cpu / 512Mi; the task asks 1 cpu / 512Mi -> n1 at cpu 2/4, mem 1Gi/8Gi.
    nodes = [node("n1"), node("n2")]
    running = [task("r0", cpu="1", memory="512Mi", status="Running", node="n1")]
    assert _scores(args, nodes, task("t", cpu="1", memory="512Mi"), running) == expected


def _pref(weight, key, op, values=None):
    expr = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    return {"weight": weight, "preference": {"matchExpressions": [expr]}}


def test_preferred_node_affinity_sums_matching_weights_times_weight():
    nodes = [
        node("a", labels={"zone": "x", "ssd": "1"}),
        node("b", labels={"zone": "x"}),
        node("c", labels={"zone": "y", "ssd": "1"}),
    ]
    aff = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                _pref(5, "zone", "In", ["x"]),
                _pref(3, "ssd", "Exists"),
            ]
        }
    }
    args = {**OFF, "nodeaffinity.weight": 2}
    # a: (5 + 3) x 2, b: 5 x 2, c: 3 x 2 (raw weights, not normalised, as Volcano)
    assert _scores(args, nodes, task("t", affinity=aff)) == [16, 10, 6]


def test_taint_toleration_prefers_nodes_without_intolerable_prefer_no_schedule():
    soft = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    hard = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    other = {"key": "old", "value": "", "effect": "PreferNoSchedule"}
    nodes = [node("a", taints=[soft, other]), node("b", taints=[soft]), node("c", taints=[hard])]
    args = {**OFF, "tainttoleration.weight": 3}
    # counts 2, 1, 0 (NoSchedule is the predicate's business) -> 0, 50, 100, times 3
    assert _scores(args, nodes, task("t")) == [0, 150, 300]
    tol = [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]
    # spot tolerated: counts 1, 0, 0 -> 0, 100, 100
    assert _scores(args, nodes, task("t", tolerations=tol)) == [0, 300, 300]


def test_rows_outside_mask_score_zero():
    plugin = NodeOrderPlugin({})
    ssn = open_session(
        snapshot(nodes=[node("a"), node("b")], jobs=[job("j", tasks=[task("t")])]),
        conf("allocate", [["predicates"]]),
    )
    t = ssn.jobs["ns/j"].tasks["ns/t"]
    mask = np.array([False, True])
    # b at cpu 1/4, memory 1Gi/8Gi: least (75 + 87) // 2 = 81, balanced (1 - 0.0625) * 100 = 93
    assert plugin.score(t, ssn.node_table, mask).tolist() == [0, 81 + 93]
    assert plugin.batch_score(t, ssn.node_table, mask).tolist() == [0, 300]

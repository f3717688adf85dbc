"""Session.node_row_score (the per-placement re-score) equals node_scores on every row, exactly:
the sum of the plugins' row fns, or a one-row view for a plugin without one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import GPU, conf, job, node, snapshot, task

PREFER = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 7, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
]}}


def _cluster(seed: int):
    rng = random.Random(seed)
    nodes = []
    for i in range(12):
        taints = [{"key": "slow", "value": "1", "effect": "PreferNoSchedule"}] if i % 4 == 0 else []
        nodes.append(node(f"n{i:02d}", cpu=str(rng.choice([4, 8, 16])), memory=f"{rng.choice([8, 16, 64])}Gi",
                          gpu=rng.choice([None, 2, 8]), labels={"zone": "ab"[i % 2]}, taints=taints))
    running = []
    for i, n in enumerate(nodes):
        for k in range(rng.randint(0, 3)):
            running.append(task(f"r{i}-{k}", cpu=str(rng.choice([1, 2])), memory=f"{rng.choice([1, 2, 4])}Gi",
                                status="Running", node=n.name))
    pending = [task("p-plain", cpu="2", memory="3Gi"),
               task("p-gpu", cpu="1", memory="1Gi", gpu=1),
               task("p-aff", cpu="1500m", memory="2Gi", affinity=PREFER),
               task("p-big", cpu="15", memory="60Gi")]
    jobs = [job("run", tasks=running, phase="Running"), job("pend", tasks=pending)]
    return snapshot(nodes=nodes, jobs=jobs), pending


NODEORDER_ALL = {"name": "nodeorder", "arguments": {"mostrequested.weight": 2, "leastrequested.weight": 1}}
BINPACK_GPU = {"name": "binpack", "arguments": {"binpack.resources": GPU, f"binpack.resources.{GPU}": 3,
                                                "binpack.weight": 2}}


# Each plugin's row_fn is checked against its own scores in test_companions.py; these pin the sum.
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("plugins", [[BINPACK_GPU, "nodeorder"], [NODEORDER_ALL, "binpack"]])
def test_row_score_sums_the_plugins_like_node_scores(seed, plugins):
    snap, pending = _cluster(seed)
    ssn = open_session(snap, conf("allocate", [plugins]))
    n = len(ssn.node_table)
    for t in pending:
        full = ssn.node_scores(t, np.ones(n, dtype=bool))
        rows = [ssn.node_row_score(t, r) for r in range(n)]
        assert rows == full.tolist(), t.name


def test_plugin_without_row_fn_falls_back_to_its_one_row_view():
    snap, pending = _cluster(4)
    ssn = open_session(snap, conf("allocate", [["nodeorder", "predicates"]]))
    # An enabled plugin's node-order callback without a row variant: scored through a view.
    ssn.add_node_order_fn("predicates", lambda t, table, mask: table.idle[:, 0] / 7.0)
    n = len(ssn.node_table)
    idle_cpu = ssn.node_table.idle[:, 0] / 7.0
    for t in pending:
        full = ssn.node_scores(t, np.ones(n, dtype=bool))
        assert [ssn.node_row_score(t, r) for r in range(n)] == full.tolist()
        without = [ssn.node_row_score(t, r) - idle_cpu[r] for r in range(n)]
        assert without != full.tolist()  # the extra callback did contribute

"""binpack: Volcano's BinPackingScore with per-resource weights and the plugin weight."""

from __future__ import annotations

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.binpack.binpack import parse_weights
from tests.scheduler_core.builders import GPU, conf, job, node, snapshot, task


@pytest.mark.parametrize(
    "arguments,expected",
    [
        ({}, (1, {"cpu": 1, "memory": 1})),
        ({"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": "3"}, (10, {"cpu": 2, "memory": 3})),
        ({"binpack.cpu": -4}, (1, {"cpu": 1, "memory": 1})),
        (
            {"binpack.resources": "nvidia.com/gpu, example.com/foo", "binpack.resources.nvidia.com/gpu": 5},
            (1, {"cpu": 1, "memory": 1, GPU: 5, "example.com/foo": 1}),
        ),
    ],
)
def test_parse_weights(arguments, expected):
    assert parse_weights(arguments) == expected


def _scores(args, nodes, t, running=()):
    jobs = [job("j", tasks=[t])]
    if running:
        jobs.append(job("r", tasks=list(running), phase="Running"))
    ssn = open_session(
        snapshot(nodes=nodes, jobs=jobs), conf("allocate", [[{"name": "binpack", "arguments": args}]])
    )
    return [round(s, 6) for s in ssn.node_scores(t, ssn.node_table.all_rows()).tolist()]


def _cluster():
    """n1 (4 cpu, 8Gi, 4 gpu) runs 1 cpu / 2Gi; n2 (8 cpu, 8Gi, 4 gpu) is empty. Fresh objects."""
    return (
        [node("n1", cpu="4", memory="8Gi", gpu=4), node("n2", cpu="8", memory="8Gi", gpu=4)],
        [task("r0", cpu="1", memory="2Gi", status="Running", node="n1")],
    )


@pytest.mark.parametrize(
    "args,t,expected",
    [
        # n1: cpu (1+1)/4 = 0.5, mem (2+2)/8 = 0.5 -> 0.5 x 100; n2: 1/8, 2/8 -> (0.125+0.25)/2 x 100
        ({}, task("t", cpu="1", memory="2Gi"), [50.0, 18.75]),
        # cpu weight 3: n1 (3 x 0.5 + 0.5) / 4 = 0.5; n2 (3 x 0.125 + 0.25) / 4 = 0.15625; x 100 x 2
        ({"binpack.weight": 2, "binpack.cpu": 3}, task("t", cpu="1", memory="2Gi"), [100.0, 31.25]),
        # gpu not listed in binpack.resources: ignored even when requested
        ({}, task("t", cpu="1", memory="2Gi", gpu=2), [50.0, 18.75]),
        # gpu weight 2: n1 (0.5 + 0.5 + 2 x 0.5) / 4; n2 (0.125 + 0.25 + 2 x 0.5) / 4
        (
            {"binpack.resources": GPU, f"binpack.resources.{GPU}": 2},
            task("t", cpu="1", memory="2Gi", gpu=2),
            [50.0, 34.375],
        ),
        # over capacity on n1 (cpu 1 + 4 > 4): the node scores 0
        ({}, task("t", cpu="4", memory="1Gi"), [0.0, 31.25]),  # n2: (4/8 + 1/8) / 2 x 100
        ({"binpack.weight": 0}, task("t", cpu="1", memory="2Gi"), [0.0, 0.0]),
    ],
)
def test_binpack_scores(args, t, expected):
    nodes, running = _cluster()
    assert _scores(args, nodes, t, running) == expected

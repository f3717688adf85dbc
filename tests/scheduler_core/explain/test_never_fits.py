"""NeverFits (never_fits.py): each kind with its exact message and details, and the jobs that
must never get it because they can run once other work finishes."""

from __future__ import annotations

import pytest

from scheduler_core.explain.never_fits import NeverFitsIndex
from scheduler_core.explain.reason_figures import CloseFigures
from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import GPU, conf, job, node, queue, replicas, run, snapshot, task

GI = 2**30
TIERS = [["priority", "gang", "conformance"], ["drf", "predicates", "proportion", "nodeorder"]]
PROPORTION = conf("enqueue, allocate, backfill", TIERS)
CAPACITY_TREE = conf(
    "enqueue, allocate, backfill",
    [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", {"name": "capacity", "enableHierarchy": True}, "nodeorder"],
    ],
)
NO_PREDICATES = conf("enqueue, allocate", [["priority", "gang"]])
TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
TOLERATE = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]


def running(name: str, node_name: str, **kw):
    return task(name, status="Running", node=node_name, **kw)


def gpu_nodes(n: int, gpus: int = 8):
    return [node(f"g{i}", cpu="64", memory="256Gi", gpu=gpus) for i in range(1, n + 1)]


def reason_of(snap, cfg, uid):
    result = run(snap, cfg)
    r = result.reasons.get(uid)
    return (
        None
        if r is None
        else (
            str(r.code),
            r.message,
            {k: v for k, v in r.details.items() if k not in ("queue_chain", "node_failures")},
        )
    )


CASES = {
    "task larger than any node": (
        lambda: snapshot(
            nodes=[node("n1", cpu="96", memory="384Gi"), node("n2", cpu="96", memory="384Gi")],
            jobs=[job("huge", tasks=[task("h", cpu="1000")])],
        ),
        PROPORTION,
        (
            "NeverFits",
            "a task needs 1000 cpu, the largest node it can use has 96",
            dict(kind="TaskLargerThanAnyNode", task="ns/h", dimension="cpu", need=1000.0, limit=96.0,
                 nodes=2, matching_nodes=2),
        ),
    ),
    "no single node holds every dimension": (
        lambda: snapshot(
            nodes=[node("a", cpu="8", memory="2Gi"), node("b", cpu="2", memory="16Gi")],
            jobs=[job("odd", tasks=[task("o", cpu="4", memory="8Gi", role="worker")])],
        ),
        PROPORTION,
        (
            "NeverFits",
            "a worker task needs 4 cpu, the largest node it can use with room for its other requests has 2",
            dict(kind="TaskLargerThanAnyNode", task="ns/o", dimension="cpu", need=4.0, limit=2.0, nodes=2,
                 matching_nodes=2),
        ),
    ),
    "the larger nodes are tainted": (
        lambda: snapshot(
            nodes=[node("small", cpu="4"), node("big", cpu="64", taints=TAINT)],
            jobs=[job("j", tasks=[task("t", cpu="8")])],
        ),
        PROPORTION,
        (
            "NeverFits",
            "a task needs 8 cpu, the largest node it can use has 4",
            dict(kind="TaskLargerThanAnyNode", task="ns/t", dimension="cpu", need=8.0, limit=4.0, nodes=2,
                 matching_nodes=1),
        ),
    ),
    "selector matches only an unschedulable node": (
        lambda: snapshot(
            nodes=[node("za", labels={"zone": "a"}), node("zb", labels={"zone": "b"}, unschedulable=True)],
            jobs=[job("j", tasks=[task("t", node_selector={"zone": "b"})])],
        ),
        PROPORTION,
        (
            "NeverFits",
            "a task can run on no node: 0/2 nodes match its selector, affinity and tolerations "
            "(1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable)",
            {
                "kind": "NoNodeMatches",
                "task": "ns/t",
                "nodes": 2,
                "matching_nodes": 0,
                "static_failures": {
                    "node(s) didn't match Pod's node affinity/selector": 1,
                    "node(s) were unschedulable": 1,
                },
            },
        ),
    ),
    "gang above the cluster": (
        lambda: snapshot(
            nodes=gpu_nodes(6),
            jobs=[job("giant", min_available=20, tasks=replicas("w", 20, cpu="8", memory="64Gi", gpu=8))],
        ),
        PROPORTION,
        (
            "NeverFits",
            "gang of 20 tasks needs 160 GPUs, the nodes it can use have 48 in total",
            dict(kind="GangExceedsCluster", tasks=20, dimension=GPU, need=160.0, limit=48.0, nodes=6),
        ),
    ),
    "gang that the nodes cannot pack": (
        # 15 GPUs <= 16 in all, but an 8-GPU node holds one 5-GPU task: two at once.
        lambda: snapshot(
            nodes=gpu_nodes(2),
            jobs=[job("g", min_available=3, tasks=replicas("w", 3, cpu="1", memory="1Gi", gpu=5))],
        ),
        PROPORTION,
        (
            "NeverFits",
            "gang of 3 tasks needs 15 GPUs, the nodes it can use hold at most 2 of its tasks (10 GPUs)",
            dict(kind="GangExceedsCluster", tasks=3, dimension=GPU, need=15.0, limit=10.0, max_tasks=2,
                 nodes=2),
        ),
    ),
    "gang above its queue's capability (proportion)": (
        lambda: snapshot(
            nodes=gpu_nodes(8),
            queues=[queue("q", capability={GPU: 40})],
            jobs=[job("giant", queue="q", min_available=6, tasks=replicas("w", 6, gpu=8))],
        ),
        PROPORTION,
        (
            "NeverFits",
            "gang of 6 tasks needs 48 GPUs, queue q can never have more than 40",
            dict(kind="GangExceedsQueueLimit", tasks=6, queue="q", limit_figure="capability", dimension=GPU,
                 need=48.0, limit=40.0),
        ),
    ),
    "gang above an ancestor's capability (capacity tree)": (
        lambda: snapshot(
            nodes=gpu_nodes(8),
            queues=[queue("research", capability={GPU: 40}), queue("train", parent="research")],
            jobs=[job("giant", queue="train", min_available=6, tasks=replicas("w", 6, gpu=8))],
        ),
        CAPACITY_TREE,
        (
            "NeverFits",
            "gang of 6 tasks needs 48 GPUs, queue research can never have more than 40",
            dict(kind="GangExceedsQueueLimit", tasks=6, queue="research", limit_figure="capability",
                 dimension=GPU, need=48.0, limit=40.0),
        ),
    ),
    "the tightest level is named (capacity tree)": (
        lambda: snapshot(
            nodes=gpu_nodes(8),
            queues=[
                queue("research", capability={GPU: 40}),
                queue("train", parent="research", capability={GPU: 16}),
            ],
            jobs=[job("g", queue="train", min_available=3, tasks=replicas("w", 3, gpu=8))],
        ),
        CAPACITY_TREE,
        (
            "NeverFits",
            "gang of 3 tasks needs 24 GPUs, queue train can never have more than 16",
            dict(kind="GangExceedsQueueLimit", tasks=3, queue="train", limit_figure="capability",
                 dimension=GPU, need=24.0, limit=16.0),
        ),
    ),
    "min resources above the queue, not admitted": (
        lambda: snapshot(
            nodes=[node("n1", cpu="16", memory="64Gi")],
            queues=[queue("capped", capability={"cpu": "4"})],
            jobs=[
                job(
                    "j",
                    queue="capped",
                    phase="Pending",
                    min_resources={"cpu": "6"},
                    tasks=[task("t", cpu="1")],
                )
            ],
        ),
        PROPORTION,
        (
            "NeverFits",
            "minResources needs 6 cpu, queue capped can never have more than 4",
            dict(kind="GangExceedsQueueLimit", tasks=1, queue="capped", limit_figure="capability",
                 dimension="cpu", need=6.0, limit=4.0),
        ),
    ),
    "a role minimum no node can meet": (
        lambda: snapshot(
            nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
            jobs=[
                job(
                    "tf",
                    min_available=2,
                    task_min_available={"ps": 1, "worker": 1},
                    tasks=[task("ps-0", cpu="16", role="ps"), *replicas("wk", 3, cpu="1", role="worker")],
                )
            ],
        ),
        PROPORTION,
        (
            "NeverFits",
            "a ps task needs 16 cpu, the largest node it can use has 8",
            dict(kind="TaskLargerThanAnyNode", task="ns/ps-0", dimension="cpu", need=16.0, limit=8.0,
                 nodes=2, matching_nodes=2),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_never_fits_kinds(name):
    build, cfg, expected = CASES[name]
    snap = build()
    (uid,) = snap.jobs  # one job per case
    assert reason_of(snap, cfg, uid) == expected


# Jobs that cannot run now but can once other work finishes, or whose gang is met or placed in
# the session: never NeverFits (their truthful reason instead).
LATER = {
    "node busy now": (
        lambda: snapshot(
            nodes=[node("n1", cpu="8")],
            jobs=[job("run", tasks=[running("r", "n1", cpu="6")]), job("j", tasks=[task("t", cpu="4")])],
        ),
        PROPORTION,
        "QueueOverDeserved",
    ),
    "queue full now, capability allows (capacity)": (
        lambda: snapshot(
            nodes=gpu_nodes(8),
            queues=[queue("research", capability={GPU: 40}), queue("train", parent="research")],
            jobs=[
                job(
                    "run",
                    queue="train",
                    min_available=3,
                    tasks=[running(f"r{i}", f"g{i}", gpu=8) for i in (1, 2, 3)],
                ),
                job("j", queue="train", min_available=3, tasks=replicas("w", 3, gpu=8)),
            ],
        ),
        CAPACITY_TREE,
        "QueueOverCapability",
    ),
    "gang fits the cluster once others finish": (
        lambda: snapshot(
            nodes=gpu_nodes(3),
            jobs=[
                job("run", tasks=[running("r", "g1", gpu=8)]),
                job("j", min_available=3, tasks=replicas("w", 3, gpu=8)),
            ],
        ),
        PROPORTION,
        "QueueOverDeserved",
    ),
    "tolerated taint": (
        lambda: snapshot(
            nodes=[node("small", cpu="4"), node("big", cpu="64", taints=TAINT)],
            jobs=[
                job("run", tasks=[running("r", "big", cpu="60", tolerations=TOLERATE)]),
                job("j", tasks=[task("t", cpu="8", tolerations=TOLERATE)]),
            ],
        ),
        PROPORTION,
        "NodeFit",
    ),
    "without the predicates plugin a cordoned node is used": (
        # (No queue plugin either: proportion's real capability counts schedulable nodes only.)
        lambda: snapshot(
            nodes=[node("n1", cpu="2"), node("n2", cpu="8", unschedulable=True)],
            jobs=[job("run", tasks=[running("r", "n2", cpu="8")]), job("j", tasks=[task("t", cpu="4")])],
        ),
        NO_PREDICATES,
        "NodeFit",
    ),
    "gang already running, an extra task too big": (
        lambda: snapshot(
            nodes=[node("n1", cpu="8")],
            jobs=[
                job(
                    "el",
                    min_available=1,
                    phase="Running",
                    tasks=[running("r", "n1", cpu="1"), task("x", cpu="16")],
                )
            ],
        ),
        PROPORTION,
        "QueueOverDeserved",
    ),
    "placed this session (one task bound, one too big)": (
        lambda: snapshot(
            nodes=[node("n1", cpu="8")],
            jobs=[job("el", min_available=1, tasks=[task("a", cpu="1"), task("x", cpu="16")])],
        ),
        PROPORTION,
        "QueueOverDeserved",
    ),
}


@pytest.mark.parametrize("name", sorted(LATER))
def test_jobs_that_can_run_later_are_not_never_fits(name):
    build, cfg, code = LATER[name]
    snap = build()
    uid = "ns/el" if "ns/el" in snap.jobs else "ns/j"
    got = reason_of(snap, cfg, uid)
    assert got is not None and got[0] == code, got


@pytest.mark.parametrize("place", ["pipeline", "allocate", None])
def test_jobs_placed_in_the_session_are_not_checked(place):
    # A gang of two 16-cpu tasks on 8-cpu nodes never fits; placed (even tentatively kept) in
    # the session, it is not examined: its reason is about what it waits for.
    snap = snapshot(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        jobs=[job("g", min_available=2, tasks=replicas("w", 2, cpu="16"))],
    )
    ssn = open_session(snap, PROPORTION)
    j = ssn.jobs["ns/g"]
    if place is not None:
        getattr(ssn, place)(j.tasks["ns/w-0"], "n1")
    index = NeverFitsIndex(ssn, CloseFigures(ssn))
    found = index.check(j)
    assert (found is None) == (place is not None)
    if found is not None:
        assert found.message == "a task needs 16 cpu, the largest node it can use has 8"


def test_details_amounts_are_rounded_output_units():
    # 0.1 cpu + 0.2 cpu in floats is 0.30000000000000004; the details say 0.3.
    snap = snapshot(
        nodes=[node("n1", cpu="250m", memory="1Gi")],
        jobs=[
            job(
                "g",
                min_available=2,
                tasks=[task("a", cpu="100m", memory="600Mi"), task("b", cpu="200m", memory="600Mi")],
            )
        ],
    )
    code, message, details = reason_of(snap, PROPORTION, "ns/g")
    assert (code, message) == (
        "NeverFits",
        "gang of 2 tasks needs 0.3 cpu, the nodes it can use have 0.25 in total",
    )
    assert (details["need"], details["limit"]) == (0.3, 0.25)

"""allocate's runs: identical tasks that would choose the same node one after another are placed in
one step, with exactly the decisions of one by one.

Each stop condition of a run has a hand-computed case (binds and where each run stopped): (a) the
node's idle or future idle no longer fits, (b) its pod slots run out, (c) another node scores
higher (a tie goes to the node whose name sorts first), (d) the queue stops being allocatable,
(e) the job becomes ready, (f) the dynamic predicates refuse, or the class spreads (never runs).
A property test compares run placement with one-by-one placement on random small clusters.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.framework.statement import Statement
from tests.conftest import profiled
from tests.scheduler_core.builders import conf, job, node, queue, replicas, run, snapshot, task

BINPACK = {"name": "binpack", "arguments": {"binpack.weight": 10}}
BINPACK_TIERS = [["priority", "gang"], ["drf", "predicates", "proportion", BINPACK]]
DEFAULT_TIERS = [["priority", "gang", "conformance"],
                 ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]]
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


@pytest.fixture
def spy(monkeypatch):
    """Records every run_length answer (task, row, limit, length) and every run placed (task, node,
    asked, placed)."""
    seen: dict[str, list[tuple]] = {"lengths": [], "runs": []}
    run_length, place_run = Placer.run_length, Statement.place_run

    def spy_length(self, task, row, limit, cap=None):
        k = run_length(self, task, row, limit, cap)
        seen["lengths"].append((task.name, row, limit, k))
        return k

    def spy_place(self, tasks, node_name, pipelined=False, stop=None):
        n = place_run(self, tasks, node_name, pipelined, stop)
        seen["runs"].append((tasks[0].name, node_name, len(tasks), n))
        return n

    monkeypatch.setattr(Placer, "run_length", spy_length)
    monkeypatch.setattr(Statement, "place_run", spy_place)
    return seen


def result_json(result: Any) -> dict:
    """Everything a session decided (binds, pipelines, evictions, phases, queue figures, reasons)."""
    data = result.to_json()
    data.pop("timing", None)
    return data


def one_by_one(build, cfg, monkeypatch) -> dict:
    """The same session with runs off: every task asks for its node."""
    monkeypatch.setattr(AllocateAction, "runs", False)
    try:
        return result_json(run(build(), cfg))
    finally:
        monkeypatch.setattr(AllocateAction, "runs", True)


def gang(name: str, n: int, min_available: int | None = None, q: str = "q1", **kw: Any):
    """A job of n identical tasks (a gang of min_available, default all of them)."""
    return job(name, queue=q, min_available=n if min_available is None else min_available,
               tasks=replicas(name, n, **kw))


def check(build, cfg, monkeypatch) -> Any:
    """Run with runs on; the result must equal one by one's. Returns the result."""
    result = run(build(), cfg)
    assert result_json(result) == one_by_one(build, cfg, monkeypatch)
    return result


def test_binpack_fills_a_node_per_run(spy, monkeypatch):
    def build():
        nodes = [node(f"n{i}", cpu="4", memory="8Gi") for i in (1, 2, 3)]
        return snapshot(nodes=nodes, jobs=[gang("w", 10)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.binds == {**{f"ns/w-{i}": "n1" for i in range(4)},
                            **{f"ns/w-{i}": "n2" for i in range(4, 8)},
                            "ns/w-8": "n3", "ns/w-9": "n3"}
    # w-0 alone (nothing to follow yet); w-1 follows it on n1 and starts a run up to n1's 4 cpu;
    # then the class expects runs: w-4 and w-8 start theirs at once.
    assert spy["lengths"] == [("w-1", 0, 9, 3), ("w-4", 1, 6, 4), ("w-8", 2, 2, 2)]
    assert spy["runs"] == [("w-1", "n1", 3, 3), ("w-4", "n2", 4, 4), ("w-8", "n3", 2, 2)]


def test_a_run_stops_where_the_future_idle_no_longer_fits(spy, monkeypatch):
    # (a) n1 has 8 cpu idle but 4 pipelined onto it: its future idle takes 4 tasks.
    def build():
        held = job("held", tasks=[task("p", cpu="4", memory="1Gi", status="Pipelined", node="n1")])
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi"), node("n2", cpu="8", memory="16Gi")],
                        jobs=[held, gang("w", 6)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.binds == {**{f"ns/w-{i}": "n1" for i in range(4)}, "ns/w-4": "n2", "ns/w-5": "n2"}
    assert spy["lengths"] == [("w-1", 0, 5, 3), ("w-4", 1, 2, 2)]


def test_a_run_stops_where_the_pod_slots_run_out(spy, monkeypatch):
    # (b) n1 has room for 8 tasks but 3 pods.
    def build():
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi", pods=3),
                               node("n2", cpu="8", memory="16Gi")],
                        jobs=[gang("w", 5)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.binds == {"ns/w-0": "n1", "ns/w-1": "n1", "ns/w-2": "n1", "ns/w-3": "n2", "ns/w-4": "n2"}
    assert spy["lengths"] == [("w-1", 0, 4, 2), ("w-3", 1, 2, 2)]


LEAST = [["priority", "gang"], ["predicates", "proportion", "nodeorder"]]


@pytest.mark.parametrize(("big", "small", "binds", "lengths"), [
    # (c) leastrequested: the 16-cpu node scores 93, 87, 81, 75, 68 with 1..5 tasks; the 4-cpu one 75
    # with one. n1 big: the fourth task ties 75 / 75 and n1 keeps it (its name sorts first); the
    # fifth goes to n2.
    ("n1", "n2", {"ns/w-0": "n1", "ns/w-1": "n1", "ns/w-2": "n1", "ns/w-3": "n1", "ns/w-4": "n2",
                  "ns/w-5": "n1"}, [("w-1", 0, 5, 3), ("w-4", 1, 2, 1)]),
    # Mirrored, n2 big: it takes three; the fourth ties 75 / 75 and goes to n1, which sorts first.
    ("n2", "n1", {"ns/w-0": "n2", "ns/w-1": "n2", "ns/w-2": "n2", "ns/w-3": "n1", "ns/w-4": "n2",
                  "ns/w-5": "n2"}, [("w-1", 1, 5, 2), ("w-3", 0, 3, 1)]),
], ids=["higher-score", "tie-to-the-first-name"])
def test_a_run_stops_where_another_node_scores_higher_or_ties_first(spy, monkeypatch, big, small, binds,
                                                                     lengths):
    def build():
        nodes = sorted([node(big, cpu="16", memory="16Gi"), node(small, cpu="4", memory="4Gi")],
                       key=lambda n: n.name)
        return snapshot(nodes=nodes, jobs=[gang("w", 6)])

    result = check(build, conf("allocate", LEAST), monkeypatch)
    assert result.binds == binds
    assert spy["lengths"] == lengths


def test_a_run_stops_where_the_queue_stops_being_allocatable(spy, monkeypatch):
    # (d) capacity: q1 may hold 3500m cpu. Four 1-cpu tasks, then two of 500m (another class,
    # after them by name index): the run after a-0 holds two (3 cpu), a-3 is refused, b-4 fits
    # (3.5), b-5 is refused.
    def build():
        tasks = [task(f"a-{i}", cpu="1", created=0.0) for i in range(4)]
        tasks += [task(f"b-{i}", cpu="500m", created=1.0) for i in (4, 5)]
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi")],
                        queues=[queue("q1", capability={"cpu": "3500m"})],
                        jobs=[job("w", min_available=4, tasks=tasks)])

    cfg = conf("allocate", [["priority", "gang"], ["drf", "predicates", "capacity", BINPACK]])
    result = check(build, cfg, monkeypatch)
    assert result.binds == {"ns/a-0": "n1", "ns/a-1": "n1", "ns/a-2": "n1", "ns/b-4": "n1"}
    assert spy["lengths"] == [("a-1", 0, 3, 2)]
    assert spy["runs"] == [("a-1", "n1", 2, 2)]
    assert result.queues["q1"].allocated.milli_cpu == 3500


def test_a_run_stops_where_the_job_becomes_ready(spy, monkeypatch):
    # (e) a gang of 3 out of 6: the run stops at the third task; the others come one per round.
    def build():
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], jobs=[gang("w", 6, min_available=3)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.binds == {f"ns/w-{i}": "n1" for i in range(6)}
    assert spy["runs"] == [("w-1", "n1", 5, 2)]


PROPORTIONAL = {"name": "predicates", "arguments": {
    "predicate.ProportionalEnable": True, "predicate.resources": "nvidia.com/gpu",
    "predicate.resources.nvidia.com/gpu.cpu": 1, "predicate.resources.nvidia.com/gpu.memory": 1}}


def test_a_run_stops_where_a_dynamic_predicate_refuses(spy, monkeypatch):
    # (f) proportional: a task without GPUs must leave 1 cpu per idle GPU on the node, so n1
    # (8 cpu, 2 GPUs) takes six 1-cpu tasks although eight fit its idle.
    def build():
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi", gpu="2"),
                               node("n2", cpu="8", memory="16Gi")],
                        jobs=[gang("w", 8)])

    cfg = conf("allocate", [["priority", "gang"], ["drf", PROPORTIONAL, "proportion", BINPACK]])
    result = check(build, cfg, monkeypatch)
    assert result.binds == {**{f"ns/w-{i}": "n1" for i in range(6)}, "ns/w-6": "n2", "ns/w-7": "n2"}
    assert spy["lengths"] == [("w-1", 0, 7, 5), ("w-6", 1, 2, 2)]


def test_spreading_classes_never_run(spy, monkeypatch):
    # (f) topology spread: a placement changes other nodes' answers, so each task asks.
    def build():
        nodes = [node("n1", cpu="8", labels={"zone": "a"}), node("n2", cpu="8", labels={"zone": "b"})]
        return snapshot(nodes=nodes,
                        jobs=[gang("w", 4, labels={"app": "web"}, topology_spread_constraints=SPREAD)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert sorted(result.binds) == [f"ns/w-{i}" for i in range(4)]
    assert spy["runs"] == [] and all(k == 1 for *_, k in spy["lengths"])


def test_pipelined_tasks_go_one_by_one(spy, monkeypatch):
    # n1's idle is taken, but a Releasing task frees 4 cpu: the gang is pipelined there.
    def build():
        old = job("old", tasks=[task("r", cpu="4", status="Releasing", node="n1"),
                                task("k", cpu="4", status="Running", node="n1")])
        return snapshot(nodes=[node("n1", cpu="8", memory="16Gi")], jobs=[old, gang("w", 3)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.pipelined == {"ns/w-0": "n1", "ns/w-1": "n1", "ns/w-2": "n1"} and not result.binds
    assert spy["runs"] == []


def test_score_recording_keeps_runs_with_one_by_one_records(spy, monkeypatch):
    # Recording no longer turns runs off: the run's copies get the tries one by one would record
    # (binpack fills n2 first; once it is full, w-3 starts a run on n1, each copy its figures).
    def build():
        nodes = [node("n1", cpu="8", memory="16Gi"), node("n2", cpu="2", memory="4Gi")]
        return snapshot(nodes=nodes, jobs=[gang("w", 6)])

    from scheduler_core.scheduler import run_session

    cfg = conf("allocate", BINPACK_TIERS)
    result = run_session(build(), cfg, record_scores=True)
    assert result.binds == {"ns/w-0": "n2", "ns/w-1": "n2", **{f"ns/w-{i}": "n1" for i in range(2, 6)}}
    assert spy["runs"] == [("w-3", "n1", 3, 3)]
    monkeypatch.setattr(AllocateAction, "runs", False)
    alone = run_session(build(), cfg, record_scores=True)
    assert result_json(result)["node_scores"] == result_json(alone)["node_scores"]
    assert sorted(result.node_scores) == [f"ns/w-{i}" for i in range(6)]
    w4, w5 = result.node_scores["ns/w-4"], result.node_scores["ns/w-5"]
    assert [e.node for e in w4.top] == ["n1"] and w4.chosen == "n1" and w4.chosen_scores == w4.top[0]
    # binpack (weight 10): n1 scores higher as each copy fills it
    assert (w4.top[0].plugins, w5.top[0].plugins) == ({"binpack": 281.25}, {"binpack": 375.0})


def test_a_discarded_gang_undoes_its_runs(spy, monkeypatch):
    # The gang needs 10 but only 8 fit: the runs placed are undone and the figures restored.
    def build():
        return snapshot(nodes=[node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi")],
                        jobs=[gang("w", 10), gang("x", 2)])

    result = check(build, conf("allocate", BINPACK_TIERS), monkeypatch)
    assert result.binds == {"ns/x-0": "n1", "ns/x-1": "n1"}
    assert spy["runs"][:2] == [("w-1", "n1", 3, 3), ("w-4", "n2", 4, 4)]
    assert result.queues["q1"].allocated.milli_cpu == 2000


# -- random small clusters: runs decide exactly as one by one ----------------------------------------
CONFIGS = {
    "binpack": BINPACK_TIERS,
    "default": DEFAULT_TIERS,
    "capacity": [["priority", "gang"], ["drf", "predicates", "capacity", BINPACK]],
    # The shipped default's queue plugin: the run's count is bounded at every level of the tree.
    "hierarchy": [["priority", "gang"], ["drf", "predicates", {"name": "capacity", "enableHierarchy": True},
                                         BINPACK]],
    "least": LEAST,
    "proportional": [["priority", "gang"], ["drf", PROPORTIONAL, "proportion", BINPACK]],
}

node_specs = st.fixed_dictionaries({
    "cpu": st.sampled_from(["2", "4", "8", "16"]), "memory": st.sampled_from(["4Gi", "8Gi", "16Gi"]),
    "pods": st.sampled_from([3, 5, 110]), "gpu": st.sampled_from([None, "1"]),
    "releasing": st.sampled_from([None, "1", "2"]), "running": st.sampled_from([None, "1", "4"]),
})
class_specs = st.fixed_dictionaries({
    "cpu": st.sampled_from(["500m", "1", "2"]), "memory": st.sampled_from(["512Mi", "1Gi", "2Gi"]),
    "count": st.integers(1, 8), "created": st.sampled_from([0.0, 1.0]),
})
job_specs = st.fixed_dictionaries({
    # min_available above the task count: the whole gang (clipped).
    "queue": st.integers(0, 1), "min_available": st.sampled_from([1, 2, 4, 99]),
    "priority": st.sampled_from([0, 100]),
    "created": st.sampled_from([0.0, 1.0, 2.0]), "classes": st.lists(class_specs, min_size=1, max_size=2),
})
worlds = st.fixed_dictionaries({
    "nodes": st.lists(node_specs, min_size=1, max_size=4),
    "capability": st.sampled_from([None, "3", "6", "12"]),
    "jobs": st.lists(job_specs, min_size=1, max_size=4),
})


def build_world(world: dict, hierarchy: bool = False):
    """A snapshot of the world: nodes (some with a Releasing or a Running task of a low-priority
    job), two queues (with `hierarchy`, under a parent that holds the capability), gangs of classes."""
    nodes, held = [], []
    for i, s in enumerate(world["nodes"]):
        nodes.append(node(f"n{i}", cpu=s["cpu"], memory=s["memory"], pods=s["pods"], gpu=s["gpu"]))
        for status in ("releasing", "running"):
            if s[status]:
                held.append(task(f"{status}{i}", cpu=s[status], memory="512Mi", status=status.capitalize(),
                                 node=f"n{i}"))
    cap = world["capability"]
    queues = [queue("q0", capability={"cpu": cap} if cap else None), queue("q1", weight=2)]
    if hierarchy:
        queues = [queue("p", capability={"cpu": cap} if cap else None),
                  queue("q0", parent="p", deserved={"cpu": "2"}), queue("q1", parent="p", weight=2)]
    jobs = [job("old", queue="q1", tasks=held, phase="Running")] if held else []
    for j, spec in enumerate(world["jobs"]):
        tasks = [task(f"j{j}-{c}-{k}", cpu=cs["cpu"], memory=cs["memory"], created=cs["created"],
                      priority=spec["priority"])
                 for c, cs in enumerate(spec["classes"]) for k in range(cs["count"])]
        jobs.append(job(f"j{j}", queue=f"q{spec['queue']}", tasks=tasks, created=spec["created"],
                        min_available=min(spec["min_available"], len(tasks)), priority=spec["priority"]))
    return snapshot(nodes=nodes, queues=queues, jobs=jobs)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(profiled(settings(max_examples=100)))
@given(world=worlds)
def test_runs_decide_as_one_by_one(name, world):
    # preempt and reclaim after allocate see the state the runs left (node tasks, job indexes).
    cfg = conf("enqueue, allocate, preempt, reclaim, backfill", CONFIGS[name])
    hierarchy = name == "hierarchy"
    with_runs = result_json(run(build_world(world, hierarchy), cfg))
    AllocateAction.runs = False
    try:
        alone = result_json(run(build_world(world, hierarchy), cfg))
    finally:
        AllocateAction.runs = True
    assert with_runs == alone

"""One-cycle smoke of the benchmark generator and session bench at size S (correctness, never timing)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from scheduler_core.bench.generator import SIZES, build_world, generate
from scheduler_core.bench.snapshot import Churn, conf_of, resource, to_snapshot
from scheduler_core.model import TaskStatus
from scheduler_core.scenario import load_scenario
from scheduler_core.scheduler import run_session


def _check_placements(spec: dict, binds: dict[str, str]) -> None:
    """Every node holds at most its allocatable; selectors and taints are respected."""
    nodes = {n["name"]: n for n in spec["nodes"]}
    load: dict[str, Counter] = defaultdict(Counter)
    for job in spec["jobs"]:
        for t in job["tasks"]:
            uid = f"{job['namespace']}/{t['name']}"
            node = t.get("node") or binds.get(uid)
            if node is None:
                continue
            n = nodes[node]
            assert not n.get("unschedulable") or t.get("node"), uid
            for k, v in (t.get("node_selector") or {}).items():
                assert n["labels"].get(k) == v, (uid, node)
            tolerated = {x["key"] for x in t.get("tolerations", ())}
            for taint in n.get("taints", ()):
                assert taint["key"] in tolerated, (uid, node, taint)
            load[node].update(t["request"])
            load[node]["pods"] += 1
    for name, used in load.items():
        alloc = nodes[name]["allocatable"]
        for dim, amount in used.items():
            assert amount <= alloc.get(dim, 0), (name, dim, amount, alloc)


def test_generator_is_seeded_and_sized() -> None:
    a, b = generate("S", "steady", seed=3), generate("S", "steady", seed=3)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a, sort_keys=True) != json.dumps(generate("S", "steady", seed=4), sort_keys=True)
    assert len(a["nodes"]) == 100 and len(a["queues"]) == SIZES["S"].queue_count == 13
    assert (SIZES["M"].queue_count, SIZES["L"].queue_count) == (131, 1111)
    tasks = [t for j in a["jobs"] for t in j["tasks"]]
    running = [t for t in tasks if t.get("node")]
    assert 1000 <= len(running) < 1000 + 64 and 1500 <= len(tasks) - len(running) < 1500 + 64
    assert {len(j["tasks"]) for j in a["jobs"]} == {1, 4, 16, 64}
    assert sum(1 for n in a["nodes"] if "nvidia.com/gpu" in n["allocatable"]) == 15
    _check_placements(a, {})  # the generator's own placement of running tasks is valid


@pytest.mark.parametrize("scenario", ["fill", "steady", "contention", "backlog"])
def test_one_cycle_is_valid(scenario: str) -> None:
    spec = generate("S", scenario, seed=1)
    snap = to_snapshot(spec)
    pending = sum(j.count(TaskStatus.PENDING) for j in snap.jobs.values())
    result = run_session(snap, conf_of(spec))
    assert result.binds, scenario
    _check_placements(spec, result.binds)  # evicted tasks still hold their node: binds fit beside them
    placed = len(result.binds) + len(result.pipelined)
    assert pending - placed == sum(j.count(TaskStatus.PENDING) for j in snap.jobs.values())
    for job in snap.jobs.values():  # gang: a job gets nothing or at least its min_member
        bound = sum(1 for t in job.tasks.values() if t.uid in result.binds)
        held = job.count(TaskStatus.RUNNING, TaskStatus.BINDING) - bound
        assert bound == 0 or bound + held >= job.min_available, job.uid
    if scenario == "contention":
        assert result.evictions and not set(result.evictions) & set(result.binds)
    if scenario == "backlog":
        unfit = {f"{j['namespace']}/{t['name']}" for j in spec["jobs"] for t in j["tasks"]
                 if t["request"]["cpu"] > 32 or t.get("node_selector") == {"zone": "nowhere"}}
        assert unfit and not unfit & set(result.binds)


def test_fast_snapshot_matches_the_scenario_loader() -> None:
    spec = generate("S", "fill", seed=2)
    fast = run_session(to_snapshot(spec), conf_of(spec))
    loaded = load_scenario(json.dumps(spec), filename="bench.json")
    slow = run_session(loaded.snapshot, loaded.conf)
    assert fast.binds == slow.binds and len(fast.binds) > 500
    assert fast.job_phase == slow.job_phase


def test_steady_churn_keeps_counts() -> None:
    world = build_world("S", "steady", seed=1)
    churn = Churn(world)
    total = len(churn.tasks)
    churn.apply(run_session(to_snapshot(world.spec), conf_of(world.spec)))
    running = churn.running_count()
    finished, submitted = churn.step()
    assert 0 < finished <= submitted < finished + 64
    assert len(churn.tasks) == total - finished + submitted
    assert churn.running_count() == running - finished
    result = run_session(to_snapshot(world.spec), conf_of(world.spec))
    churn.apply(result)
    assert churn.running_count() == running - finished + len(result.binds)
    _check_placements(world.spec, {})


def test_resource_units() -> None:
    r = resource({"cpu": 1.5, "memory": 2.0, "pods": 110, "nvidia.com/gpu": 1})
    assert (r.milli_cpu, r.memory, r.max_task_num) == (1500.0, 2.0, 110)
    assert r.scalars == {"nvidia.com/gpu": 1000.0}


def test_table_and_targets() -> None:
    from scheduler_core.bench.report import check_targets, format_table

    rows = [{"size": "M", "scenario": "fill", "placements_per_s": 61_234, "x": 1.234},
            {"size": "S", "scenario": "fill", "placements_per_s": 10, "x": None}]
    assert format_table([("size", "size"), ("placements/s", "placements_per_s"), ("x", "x")], rows) == (
        "| size | placements/s | x    |\n"
        "|------|--------------|------|\n"
        "|    M |       61,234 | 1.23 |\n"
        "|    S |           10 |    - |")
    assert check_targets("session", rows) == (
        "- M fill placements_per_s = 61,234 (target >= 50,000): met\n")
    assert check_targets("session", [{**rows[0], "placements_per_s": 49_999}]).endswith("MISSED\n")


def test_the_session_profile_is_pyinstruments_call_tree():
    from scheduler_core.bench.session_bench import profile

    tree = profile("S", "fill")
    assert "Recorded:" in tree and "CPU time:" in tree  # pyinstrument's header
    assert "run_session" in tree and "AllocateAction.execute" in tree
    top = profile("S", "fill", profiler="cprofile")
    assert "Ordered by: internal time" in top and "Ordered by: cumulative time" in top

"""capacity, flat and hierarchical: worked numbers, tree rules, extension points, reasons."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_core.framework.session import Event, open_session
from scheduler_core.model import JobPhase
from scheduler_core.plugins.capacity.capacity import CapacityPlugin
from scheduler_core.resources import Resource
from tests.scheduler_core.builders import conf, job, node, queue, run, snapshot, task

GPU = "nvidia.com/gpu"


def tiers(hierarchy: bool) -> list:
    """Conf tiers with capacity (optionally hierarchical)."""
    cap: dict[str, Any] = {"name": "capacity", "enableHierarchy": True} if hierarchy else {"name": "capacity"}
    return [["priority", "gang"], [cap, "predicates", "nodeorder"]]


def cores(r: Resource | None) -> float:
    """cpu of a resource in cores."""
    assert r is not None
    return round(r.milli_cpu / 1000, 2)


def q(name: str, parent: str | None, deserved: float | None, cap: float | None = None,
      guar: float | None = None, **kw: Any) -> Any:
    """A queue with cpu + memory (4G per CPU) figures."""
    def both(c: float | None) -> dict | None:
        return None if c is None else {"cpu": str(c), "memory": f"{int(c * 4)}G"}
    return queue(name, parent, deserved=both(deserved), capability=both(cap), guarantee=both(guar), **kw)


def seed_tree() -> list:
    """Hierarchical capacity, worked example: root 100 CPU; team-a / team-b; four leaves."""
    return [q("team-a", "root", 60, 70, 20), q("team-b", "root", 40, 50, 20),
            q("training", "team-a", 40, 50, 10), q("inference", "team-a", 20, 30, 10),
            q("batch", "team-b", 30, 40, 15), q("interactive", "team-b", 10, 20, 5)]


def seed_jobs() -> list:
    """The running load of the seed example plus one pending 10-CPU task in training."""
    def running(name: str, node_name: str, c: int) -> Any:
        return task(name, cpu=str(c), memory=f"{c}G", status="Running", node=node_name)
    return [job("train-run", "training", [running("t1", "n1", 10), running("t2", "n1", 10),
                                          running("t3", "n2", 10)], phase=JobPhase.RUNNING),
            job("infer-run", "inference", [running("i1", "n2", 15)], phase=JobPhase.RUNNING),
            job("batch-run", "batch", [running("b1", "n3", 10), running("b2", "n3", 10),
                                       running("b3", "n4", 10)], phase=JobPhase.RUNNING),
            job("train-new", "training", [task("t4", cpu="10", memory="10G")],
                min_resources={"cpu": "10", "memory": "10G"}, phase="Pending")]


def seed_nodes() -> list:
    """Four nodes of 25 CPU / 100G."""
    return [node(f"n{i}", cpu="25", memory="100G") for i in range(1, 5)]


def open_(queues: list, jobs: list, nodes: list | None = None,
          hierarchy: bool = True) -> tuple[Any, CapacityPlugin]:
    """An open session with capacity, and the plugin."""
    snap = snapshot(nodes=nodes or seed_nodes(), queues=queues, jobs=jobs)
    ssn = open_session(snap, conf("enqueue, allocate", tiers(hierarchy)))
    return ssn, ssn.plugins["capacity"]


def test_seed_002_propagation_end_to_end() -> None:
    res = run(snapshot(nodes=seed_nodes(), queues=seed_tree(), jobs=seed_jobs()),
              conf("enqueue, allocate", tiers(True)))
    assert res.binds == {"ns/t4": "n4"}
    figs = res.queues
    assert {n: cores(figs[n].allocated) for n in ("training", "team-a", "root", "team-b")} == {
        "training": 40, "team-a": 55, "root": 85, "team-b": 30}
    assert {n: round(figs[n].share, 3) for n in ("training", "team-a", "root")} == {
        "training": 1.0, "team-a": 0.917, "root": 0.85}
    assert {n: cores(figs[n].real_capability) for n in figs} == {
        "root": 100, "team-a": 70, "team-b": 50, "training": 50, "inference": 30, "batch": 40,
        "interactive": 20}
    assert (cores(figs["root"].guarantee), cores(figs["root"].deserved)) == (40, 100)
    assert res.warnings == []
    ex = res.explanations["training"]
    parent = ex["parent"]
    assert (ex["clamp"], parent["queue"], parent["real_capability"]["cpu"]) == ("none", "team-a", 70.0)
    json.dumps(res.to_json())
    json.dumps(res.explanations)


def test_capability_inheritance_and_real_capability_down_the_tree() -> None:
    # parent caps cpu only (memory inherited from root = cluster); child sets nothing at all.
    queues = [queue("p", "root", capability={"cpu": "8"}, guarantee={"cpu": "2"}),
              queue("c1", "p", guarantee={"cpu": "3"}), queue("c2", "p", capability={"cpu": "6", GPU: "1"})]
    nodes = [node("n1", cpu="20", memory="64Gi", gpu=4)]
    ssn, cp = open_(queues, [job("j", "c1", [task("x")])], nodes)
    a = cp.queue_opts
    assert (cores(a["c1"].capability), a["c1"].capability.memory, a["c1"].capability.scalars[GPU]) == (
        8, 64 * 2 ** 30, 4000)
    assert a["c2"].capability.scalars[GPU] == 1000                        # own value kept
    # p: min(8, (20 - 2) + 2) = 8; c1: min(8, (8 - 3) + 3) = 8; c2: min(6, (8 - 3) + 0) = 5
    assert [cores(a[n].real_capability) for n in ("p", "c1", "c2")] == [8, 8, 5]
    assert ssn.plugins["capacity"].tree.explanations["c1"]["inherited_capability"] == ["cpu", "memory", GPU]


def test_consistency_warnings() -> None:
    queues = [queue("p", "root", capability={"cpu": "4"}, deserved={"cpu": "4"}, guarantee={"cpu": "1"}),
              queue("c1", "p", capability={"cpu": "6"}, deserved={"cpu": "3"}, guarantee={"cpu": "1"}),
              queue("c2", "p", deserved={"cpu": "2"}, guarantee={"cpu": "1"})]
    res = run(snapshot(nodes=[node("n1", cpu="10")], queues=queues, jobs=[job("j", "c2", [task("x")])]),
              conf("enqueue, allocate", tiers(True)))
    assert res.warnings == [
        "queue c1: capability above its parent p's (cpu 6 > 4)",
        "queue p: children's deserved sum above its own (cpu 5 > 4)",
        "queue p: children's guarantee sum above its own (cpu 2 > 1)",
    ]
    assert res.binds == {"ns/x": "n1"}  # warnings never block scheduling


def test_no_warning_for_what_a_parent_leaves_unset() -> None:
    # the parent sets no guarantee and no deserved: its children's figures break no promise
    queues = [queue("p", "root"), queue("c1", "p", deserved={"cpu": "3"}, guarantee={"cpu": "1"})]
    res = run(snapshot(nodes=[node("n1", cpu="10")], queues=queues, jobs=[job("j", "c1", [task("x")])]),
              conf("enqueue, allocate", tiers(True)))
    assert res.warnings == []
    assert res.queues["p"].share == 1.0          # best-effort parent
    assert res.explanations["p"]["best_effort"] is True


def test_cycle_breaks_only_the_queues_under_it() -> None:
    queues = [queue("x", "y"), queue("y", "x"), queue("z", "x"), queue("ok", "root")]
    jobs = [job("in-cycle", "z", [task("c1")]), job("fine", "ok", [task("f1")])]
    res = run(snapshot(nodes=[node("n1")], queues=queues, jobs=jobs), conf("enqueue, allocate", tiers(True)))
    assert res.warnings == ["queue hierarchy has a cycle: x -> y -> x"]
    assert res.binds == {"ns/f1": "n1"}
    reason = res.reasons["ns/in-cycle"]
    assert (reason.code.value, reason.message) == (
        "InvalidJob", "queue z is in or under a cycle of the queue hierarchy (z -> x -> y -> x)")


def test_jobs_only_in_leaf_queues() -> None:
    ssn, cp = open_(seed_tree(), [job("bad", "team-a", [task("x")]), job("good", "training", [task("y")])])
    bad = cp.job_valid(ssn.jobs["ns/bad"])
    assert bad is not None and (bad.passed, bad.reason) == (False, "InvalidJob")
    assert bad.message == ("queue team-a is not a leaf queue: jobs may only be submitted to leaf queues "
                           "(its children: inference, training)")
    assert cp.job_valid(ssn.jobs["ns/good"]) is None
    assert cp.job_enqueueable(ssn.jobs["ns/bad"]) == -1


def test_hierarchical_queue_order_and_victim_order() -> None:
    ssn, cp = open_(seed_tree(), seed_jobs())
    qs = ssn.queues
    # shares: team-a 45/60 = 0.75, team-b 30/40 = 0.75 ... training 30/40, inference 15/20, batch 1.0
    assert (round(cp.queue_opts["team-a"].share, 3), round(cp.queue_opts["team-b"].share, 3)) == (0.75, 0.75)
    cp.on_allocate(Event(ssn.jobs["ns/train-new"].tasks["ns/t4"]))       # team-a -> 55/60
    assert cp.queue_order(qs["batch"], qs["training"]) == -1             # compared as team-b vs team-a
    assert cp.queue_order(qs["inference"], qs["training"]) == -1         # siblings: 0.75 < 1.0
    assert cp.queue_order(qs["interactive"], qs["team-a"]) == -1         # leaves first
    qs["team-a"].priority = 1
    assert cp.queue_order(qs["team-a"], qs["interactive"]) == -1         # priority before all
    # victims: same subtree as the preemptor (training) first
    assert cp.victim_queue_order(qs["inference"], qs["batch"], qs["training"]) == -1
    assert cp.victim_queue_order(qs["batch"], qs["interactive"], qs["training"]) == 0


def test_allocatable_checks_every_level_with_reason_chain() -> None:
    # training has 20 CPU of room (50 - 30) but team-a only 15 (70 - 55 after inference grows);
    # the check goes leaf to root, so team-a is the level named
    jobs = seed_jobs()
    jobs[1].tasks["ns/i1"].resreq = Resource(25000, 25e9)
    ssn, cp = open_(seed_tree(), jobs)
    big = task("big", cpu="16", memory="1G")
    big.job_uid = "ns/train-new"
    assert cp.allocatable(ssn.queues["training"], big) is False
    rec = ssn.reason_records["ns/train-new"][-1]
    assert rec["message"] == "queue team-a resource quota insufficient: insufficient cpu (need 16, 15 left)"
    assert rec["code"].value == "QueueOverCapability"
    chain = rec["details"]["queue_chain"]
    assert [(c["queue"], c["headroom"]["cpu"]) for c in chain] == [("root", 15.0), ("team-a", 15.0),
                                                                  ("training", 20.0)]
    big.resreq = Resource(15000, 1e9)
    assert cp.allocatable(ssn.queues["training"], big) is True


def test_enqueue_hierarchical_and_inqueue_propagation() -> None:
    ssn, cp = open_(seed_tree(), seed_jobs())
    new = ssn.jobs["ns/train-new"]
    assert cp.job_enqueueable(new) == 1
    cp.job_enqueued(new)
    inqueue = [cores(cp.queue_opts[n].inqueue) for n in ("training", "team-a", "root", "team-b")]
    assert inqueue == [10, 10, 10, 0]
    greedy = job("greedy", "inference", [task("g", cpu="20")], min_resources={"cpu": "20"}, phase="Pending")
    ssn.jobs[greedy.uid] = greedy
    # inference: 20 + 15 + 0 - 15 (elastic: no min resources) = 20 <= 30; team-a: 20 + 45 + 10 - 30 = 45 <= 70
    assert cp.job_enqueueable(greedy) == 1
    greedy.min_resources = Resource(60000)
    assert cp.job_enqueueable(greedy) == -1
    assert ssn.reason_records[greedy.uid][-1]["message"] == (
        "queue inference resource quota insufficient: insufficient cpu (need 60, 30 left)")


def test_events_propagate_in_depth_steps() -> None:
    ssn, cp = open_(seed_tree(), seed_jobs())
    t4 = ssn.jobs["ns/train-new"].tasks["ns/t4"]
    cp.on_allocate(Event(t4))
    allocated = [cores(cp.queue_opts[n].allocated) for n in ("training", "team-a", "root", "team-b")]
    assert allocated == [40, 55, 85, 30]
    cp.on_deallocate(Event(t4))
    assert [cores(cp.queue_opts[n].allocated) for n in ("training", "team-a", "root")] == [30, 45, 75]
    state = cp.simulate_state()
    cp.simulate_add_task(state, t4)
    assert cores(state["root"].allocated) == 85 and cores(cp.queue_opts["root"].allocated) == 75
    probe = task("probe", cpu="11")
    probe.job_uid = t4.job_uid
    assert cp.simulate_allocatable(state, ssn.queues["training"], probe) is False   # 40 + 11 > 50
    cp.simulate_remove_task(state, t4)
    assert cp.simulate_allocatable(state, ssn.queues["training"], probe) is True    # 41, 56, 86


# -- flat mode -----------------------------------------------------------------------------------

def test_flat_deserved_clamps_and_best_effort_share() -> None:
    queues = [queue("big", deserved={"cpu": "50"}, capability={"cpu": "6"}),     # clamped by capability
              queue("small", deserved={"cpu": "1"}, guarantee={"cpu": "2"}),    # raised to guarantee
              queue("be")]                                                      # best-effort
    jobs = [job(f"j{n}", n, [task(f"{n}1")]) for n in ("big", "small", "be")]
    ssn, cp = open_(queues, jobs, [node("n1", cpu="10")], hierarchy=False)
    a = cp.queue_opts
    assert {n: cores(a[n].deserved) for n in a} == {"be": 0, "big": 6, "small": 2}
    assert {n: cp.tree.explanations[n]["clamp"] for n in a} == {
        "be": "none", "big": "real capability", "small": "guarantee"}
    assert (a["be"].share, a["big"].share, a["small"].share) == (1.0, 0.0, 0.0)
    qs = ssn.queues
    cp.on_allocate(Event(ssn.jobs["ns/jsmall"].tasks["ns/small1"]))
    cp.on_allocate(Event(ssn.jobs["ns/jsmall"].tasks["ns/small1"]))          # small: 2/2 = share 1
    assert cp.queue_order(qs["small"], qs["be"]) == -1                       # tie: deserved first
    assert cp.queue_order(qs["big"], qs["small"]) == -1


@pytest.mark.parametrize(("victim_req", "alloc", "deserved", "guarantee", "reclaimer_req", "taken"), [
    ({"cpu": "1"}, 4, {"cpu": "2"}, None, {"cpu": "1"}, 2),                  # above deserved: 4 -> 2
    ({"cpu": "1"}, 4, {"cpu": "2"}, {"cpu": "3"}, {"cpu": "1"}, 1),          # guarantee 3 kept
    ({"cpu": "1"}, 2, {"cpu": "2"}, None, {"cpu": "1"}, 0),                  # within deserved
    ({"cpu": "1"}, 2, None, None, {"cpu": "1"}, 2),                          # best-effort: immediate
    ({GPU: "1"}, 2, {"cpu": "2"}, None, {"cpu": "1"}, 0),                    # no shared dimension
    ({GPU: "1"}, 2, {"cpu": "1"}, None, {GPU: "1"}, 2),                      # uses no deserved dim
])
def test_reclaim_triple_check(victim_req: dict, alloc: int, deserved: dict | None, guarantee: dict | None,
                              reclaimer_req: dict, taken: int) -> None:
    victims = [task(f"v{i}", request=victim_req, status="Running", node="n1") for i in range(alloc)]
    queues = [queue("vq", deserved=deserved, guarantee=guarantee), queue("rq", deserved={"cpu": "4"})]
    jobs = [job("victims", "vq", victims), job("claim", "rq", [task("r", request=reclaimer_req)])]
    ssn, cp = open_(queues, jobs, [node("n1", cpu="8", gpu=8)], hierarchy=False)
    candidates = list(ssn.jobs["ns/victims"].tasks.values())
    chosen, vote = cp.reclaimable(ssn.jobs["ns/claim"].tasks["ns/r"], candidates)
    assert (len(chosen), vote) == (taken, 1)


@pytest.mark.parametrize(("req", "expected"), [
    ({"cpu": "1"}, False),                  # cpu already at deserved
    ({"cpu": "1", GPU: "1"}, True),         # the GPU dimension is still under deserved
    ({GPU: "3"}, False),                    # 3 > 2 GPUs deserved
])
def test_preemptive_any_requested_dimension_under_deserved(req: dict, expected: bool) -> None:
    queues = [queue("q", deserved={"cpu": "2", GPU: "2"})]
    running = [task(f"r{i}", status="Running", node="n1") for i in range(2)]
    jobs = [job("j", "q", [*running, task("p", request=req)])]
    ssn, cp = open_(queues, jobs, [node("n1", cpu="8", gpu=8)], hierarchy=False)
    assert cp.preemptive(ssn.queues["q"], ssn.jobs["ns/j"].tasks["ns/p"]) is expected


@pytest.mark.parametrize(("borrower_guarantee", "evicted", "pipelined"), [
    # borrower holds 8 > deserved 4: n1 (first by name) gives b6 then b4 (reverse task order)
    (None, ["ns/b6", "ns/b4"], {"ns/o1": "n1", "ns/o2": "n1"}),
    # one victim would leave 7 = guarantee, a second would dig into it: the gang cannot fit
    ("7", [], {}),
])
def test_reclaim_end_to_end_respects_guarantee(borrower_guarantee: str | None, evicted: list[str],
                                               pipelined: dict[str, str]) -> None:
    guarantee = {"cpu": borrower_guarantee} if borrower_guarantee else None
    queues = [queue("owner", deserved={"cpu": "4"}),
              queue("borrower", deserved={"cpu": "4"}, guarantee=guarantee)]
    running = [task(f"b{i}", cpu="1", memory="1Gi", status="Running", node=f"n{i % 2 + 1}") for i in range(8)]
    jobs = [job("loan", "borrower", running, phase=JobPhase.RUNNING),
            job("own", "owner", [task("o1"), task("o2")], min_available=2)]
    snap = snapshot(nodes=[node("n1"), node("n2")], queues=queues, jobs=jobs)
    res = run(snap, conf("enqueue, allocate, reclaim", [["priority", "gang", "conformance"],
                                                         ["capacity", "predicates", "nodeorder"]]))
    assert (res.evictions, res.pipelined, res.binds) == (evicted, pipelined, {})


def test_without_enable_hierarchy_the_tree_is_ignored() -> None:
    # flat mode: a job in a queue with children is fine, and ancestors get no figures
    queues = [queue("team", "root", deserved={"cpu": "2"}), queue("leaf", "team", deserved={"cpu": "1"})]
    res = run(snapshot(nodes=[node("n1")], queues=queues, jobs=[job("j", "team", [task("x")])]),
              conf("enqueue, allocate", tiers(False)))
    assert res.binds == {"ns/x": "n1"}
    assert sorted(res.queues) == ["team"]
    assert (cores(res.queues["team"].deserved), res.queues["team"].share) == (2, 0.5)

"""proportion in a session: real capability, extension points, events, figures, reasons."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_core.framework.session import Event, open_session
from scheduler_core.model import JobPhase, QueueState
from scheduler_core.plugins.proportion.proportion import ProportionPlugin
from scheduler_core.resources import Resource
from tests.scheduler_core.builders import conf, job, node, queue, replicas, run, snapshot, task

TIERS = [["priority", "gang"], ["proportion", "predicates", "nodeorder"]]


def cores(r: Resource | None) -> float:
    """cpu of a resource in cores."""
    assert r is not None
    return round(r.milli_cpu / 1000, 2)


def open_(nodes: list, queues: list, jobs: list, tiers: list | None = None) -> tuple[Any, ProportionPlugin]:
    """An open session with proportion, and the plugin."""
    snap = snapshot(nodes=nodes, queues=queues, jobs=jobs)
    ssn = open_session(snap, conf("enqueue, allocate", tiers or TIERS))
    return ssn, ssn.plugins["proportion"]


def test_seed_000_real_capability_table() -> None:
    # 100 CPU, each queue guarantees 10 (total 30): a min(60, 80) = 60, b 80, c min(50, 80) = 50.
    queues = [queue("a", guarantee={"cpu": "10"}, capability={"cpu": "60"}),
              queue("b", guarantee={"cpu": "10"}),
              queue("c", guarantee={"cpu": "10"}, capability={"cpu": "50"})]
    jobs = [job(f"j{q}", q, [task(f"{q}1")], phase="Pending") for q in "abc"]
    _, pp = open_([node("big", cpu="100", memory="100Gi")], queues, jobs)
    assert {n: cores(a.real_capability) for n, a in pp.queue_opts.items()} == {"a": 60, "b": 80, "c": 50}
    assert cores(pp.total_guarantee) == 30
    # unset memory capability is unlimited, so real capability keeps the contestable memory
    assert pp.queue_opts["a"].real_capability.memory == 100 * 2 ** 30
    # guarantee floors deserved although each queue asks for 1 CPU only
    assert {n: cores(a.deserved) for n, a in pp.queue_opts.items()} == {"a": 10, "b": 10, "c": 10}


def test_seed_001_end_to_end_figures_and_explanations() -> None:
    queues = [queue("a", weight=2, capability={"cpu": "50"}, guarantee={"cpu": "10"}), queue("b", weight=3),
              queue("c", weight=5, guarantee={"cpu": "20"})]
    jobs = [job("ja", "a", replicas("a", 8, cpu="10")), job("jb", "b", replicas("b", 6, cpu="10")),
            job("jc", "c", replicas("c", 3, cpu="10"))]
    res = run(snapshot(nodes=[node("big", cpu="100", memory="1000Gi")], queues=queues, jobs=jobs),
              conf("enqueue, allocate", TIERS))
    figs = res.queues
    assert {n: cores(figs[n].deserved) for n in "abc"} == {"a": 28, "b": 42, "c": 30}
    assert {n: cores(figs[n].real_capability) for n in "abc"} == {"a": 50, "b": 70, "c": 90}
    assert {n: cores(figs[n].allocated) for n in "abc"} == {"a": 20, "b": 40, "c": 30}
    assert {n: round(figs[n].share, 4) for n in "abc"} == {"a": 0.7143, "b": 0.9524, "c": 1.0}
    assert (cores(figs["a"].request), cores(figs["a"].capability), cores(figs["a"].guarantee)) == (80, 50, 10)
    assert figs["c"].overused is True and figs["a"].overused is False
    ex = res.explanations["a"]
    # a third round finds nothing moves (memory is left over, cpu is not): everyone is met
    assert (ex["plugin"], ex["weight"], ex["rounds_total"], ex["algorithm_rounds"]) == ("proportion", 2, 3, 3)
    assert ex["rounds"][2]["met"] is True and ex["rounds"][1]["met"] is False
    # the one-word clamp speaks for cpu; memory (requests of 1Gi) is clamped by request throughout
    assert [(r["clamp"], r["clamps"]) for r in ex["rounds"]] == [("none", {"memory": "request"})] * 3
    assert ex["rounds"][2]["remaining"]["cpu"] == 0.0
    assert [r["clamp"] for r in res.explanations["c"]["rounds"]] == ["request"]
    json.dumps(res.explanations)
    json.dumps(res.to_json())


# -- extension points, table-driven ------------------------------------------------------------

def _session(allocated_cpu: int, request_cpu: int, *, state: str = "Open", cap: str | None = None) -> tuple:
    """One queue q1 (4-CPU node): `allocated_cpu` cores running, the rest pending (1 CPU each)."""
    running = [task(f"r{i}", cpu="1", status="Running", node="n1") for i in range(allocated_cpu)]
    pending = [task(f"p{i}", cpu="1") for i in range(request_cpu - allocated_cpu)]
    q = queue("q1", state=state, capability={"cpu": cap} if cap else None)
    return open_([node("n1", cpu="4", memory="8Gi")], [q], [job("j1", "q1", running + pending)])


@pytest.mark.parametrize(("allocated", "requested", "state", "overused", "allocatable"), [
    (0, 2, "Open", False, True),      # deserved 2 cpu: room for one more
    (1, 2, "Open", False, True),      # 1 + 1 <= 2
    (2, 3, "Open", False, True),      # deserved 3 (request)
    (2, 2, "Open", True, False),      # deserved = allocated: overused
    (0, 2, "Closed", False, False),   # closed queues take nothing
])
def test_overused_and_allocatable(allocated: int, requested: int, state: str, overused: bool,
                                  allocatable: bool) -> None:
    ssn, pp = _session(allocated, requested, state=state)
    q = ssn.queues["q1"]
    probe = task("probe", cpu="1")
    probe.job_uid = "ns/j1"
    assert pp.overused(q) is overused
    assert pp.allocatable(q, probe) is allocatable
    assert pp.preemptive(q, probe) is allocatable


def test_allocatable_checks_requested_dimensions_only() -> None:
    # memory deserved is tiny (request 1Gi), yet a cpu-only task is not refused for memory
    ssn, pp = _session(0, 2)
    cpu_only = task("cpu-only", cpu="1", memory=None)
    cpu_only.job_uid = "ns/j1"
    assert pp.allocatable(ssn.queues["q1"], cpu_only) is True
    mem_heavy = task("mem", cpu=None, memory="4Gi")
    mem_heavy.job_uid = "ns/j1"
    assert pp.allocatable(ssn.queues["q1"], mem_heavy) is False
    rec = ssn.reason_records["ns/j1"][-1]
    assert rec["message"] == "queue q1 resource quota insufficient: insufficient memory (need 4Gi, 2Gi left)"
    assert str(rec["code"].value) == "QueueOverDeserved"
    assert rec["details"]["queue_chain"][0]["queue"] == "q1"


def test_queue_order_priority_then_share() -> None:
    queues = [queue("hi", priority=5), queue("lo1"), queue("lo2")]
    jobs = [job("h", "hi", [task("h1", status="Running", node="n1"), task("h2")]),
            job("l1", "lo1", [task("a1", status="Running", node="n1"), task("a2")]),
            job("l2", "lo2", [task("b1"), task("b2")])]
    ssn, pp = open_([node("n1", cpu="8", memory="16Gi")], queues, jobs)
    q = ssn.queues
    assert pp.queue_order(q["hi"], q["lo2"]) == -1      # priority wins over share
    assert pp.queue_order(q["lo2"], q["lo1"]) == -1     # share 0 before share 0.5
    assert pp.queue_order(q["lo1"], q["lo1"]) == 0


def test_job_enqueueable_and_enqueued() -> None:
    q = queue("capped", capability={"cpu": "4"})
    jobs = [job("fits", "capped", [task("f1", cpu="3")], min_resources={"cpu": "3"}, phase="Pending"),
            job("big", "capped", [task("g1", cpu="2")], min_resources={"cpu": "2"}, phase="Pending"),
            job("free", "capped", [task("x1", cpu="9")], phase="Pending")]
    ssn, pp = open_([node("n1", cpu="16", memory="64Gi")], [q], jobs)
    fits, big, free = (ssn.jobs[f"ns/{n}"] for n in ("fits", "big", "free"))
    assert pp.job_enqueueable(fits) == 1
    pp.job_enqueued(fits)
    assert cores(pp.queue_opts["capped"].inqueue) == 3
    assert pp.job_enqueueable(big) == -1                 # 2 + 3 inqueue > 4
    assert pp.job_enqueueable(free) == 1                 # no min resources
    rec = ssn.reason_records["ns/big"][-1]
    assert rec["message"] == "queue capped resource quota insufficient: insufficient cpu (need 2, 1 left)"
    assert str(rec["code"].value) == "QueueOverCapability"
    chain = rec["details"]["queue_chain"]
    assert [(c["queue"], c["headroom"]["cpu"], c["inqueue"]["cpu"]) for c in chain] == [("capped", 4.0, 3.0)]
    ssn.queues["capped"].state = QueueState.CLOSED
    assert pp.job_enqueueable(big) == -1
    assert ssn.reason_records["ns/big"][-1]["message"] == "queue capped is closed"


def test_enqueue_subtracts_elastic_and_counts_running_reservation() -> None:
    # running job: min 2 CPU, 3 allocated -> elastic 1; its min is met so no inqueue reservation
    running = job("run", "q", [task(f"r{i}", status="Running", node="n1") for i in range(3)],
                  min_resources={"cpu": "2"}, phase=JobPhase.RUNNING)
    waiting = job("wait", "q", [task("w1", cpu="2")], min_resources={"cpu": "2"}, phase="Pending")
    ssn, pp = open_([node("n1", cpu="8", memory="16Gi")], [queue("q", capability={"cpu": "4"})],
                    [running, waiting])
    attr = pp.queue_opts["q"]
    assert (cores(attr.allocated), cores(attr.elastic), cores(attr.inqueue)) == (3, 1, 0)
    assert pp.job_enqueueable(ssn.jobs["ns/wait"]) == 1  # 2 + 3 + 0 - 1 = 4 <= 4


def test_reclaimable_takes_only_above_deserved() -> None:
    # 5 CPU, qa asks 3 and qb 4: 2.5 each. qb holds 4: victims while its simulated allocation
    # stays above 2.5 (two of them), and none from qa (1 < 2.5)
    jobs = [job("jb", "qb", [task(f"b{i}", status="Running", node="n1") for i in range(4)]),
            job("ja", "qa", [task("a0", status="Running", node="n1"), task("a1"), task("a2")])]
    ssn, pp = open_([node("n1", cpu="5", memory="16Gi")], [queue("qa"), queue("qb")], jobs)
    assert (cores(pp.queue_opts["qa"].deserved), cores(pp.queue_opts["qb"].deserved)) == (2.5, 2.5)
    cands = [ssn.jobs["ns/jb"].tasks[f"ns/b{i}"] for i in range(4)] + [ssn.jobs["ns/ja"].tasks["ns/a0"]]
    victims, vote = pp.reclaimable(ssn.jobs["ns/ja"].tasks["ns/a1"], cands)
    assert ([v.name for v in victims], vote) == (["b0", "b1"], 1)


def test_events_and_simulation_keep_figures_current() -> None:
    ssn, pp = _session(1, 4)
    attr, t = pp.queue_opts["q1"], ssn.jobs["ns/j1"].tasks["ns/p0"]
    pp.on_allocate(Event(t))
    assert (cores(attr.allocated), attr.share) == (2, 0.5)
    pp.on_deallocate(Event(t))
    assert (cores(attr.allocated), attr.share) == (1, 0.25)
    state = pp.simulate_state()
    for name in ("p0", "p1", "p2"):
        pp.simulate_add_task(state, ssn.jobs["ns/j1"].tasks[f"ns/{name}"])
    assert cores(state["q1"].allocated) == 4 and cores(attr.allocated) == 1   # the copy only
    assert pp.simulate_allocatable(state, ssn.queues["q1"], t) is False
    pp.simulate_remove_task(state, t)
    assert pp.simulate_allocatable(state, ssn.queues["q1"], t) is True
    assert state["q1"].share == 0.75


def test_figures_keep_deserved_from_open_and_allocation_from_close() -> None:
    snap = snapshot(nodes=[node("n1", cpu="4", memory="8Gi")], queues=[queue("q1")],
                    jobs=[job("j1", "q1", replicas("t", 3))])
    res = run(snap, conf("enqueue, allocate", TIERS))
    fig = res.queues["q1"]
    assert (cores(fig.deserved), cores(fig.allocated), fig.share, len(res.binds)) == (3, 3, 1.0, 3)
    assert fig.to_json()["deserved"] == {"cpu": 3.0, "memory": 3 * 2.0 ** 30}

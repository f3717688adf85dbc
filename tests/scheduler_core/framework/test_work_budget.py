"""Work budget: a job whose evaluation costs more than its budget is deferred, never the cycle.

Deferred means: its tentative placements of the round are undone, reason `Deferred` naming the
budget, no further work for it in the session, every other job scheduled as without it. And the
property: whatever one job contains (inter-pod terms, replicas), the cycle's work units grow by
at most that job's budget plus a term linear in nodes + tasks.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.framework.work_budget import (
    DEFAULT_WORK_BUDGET,
    WorkBudgetExceeded,
    WorkMeter,
    default_budget,
    inter_pod_rules,
    set_default_budget,
)
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, queue, replicas, snapshot, task

HOST = "kubernetes.io/hostname"


def _terms(k: int, key: str = HOST) -> dict:
    """k preferred affinity and k preferred anti-affinity terms over app=x<i>."""
    def term(i: int) -> dict:
        expr = {"key": "app", "operator": "In", "values": [f"x{i}", "x0"]}
        return {"weight": 1 + i % 100,
                "podAffinityTerm": {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": key}}
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return {"podAffinity": {pref: [term(i) for i in range(k)]},
            "podAntiAffinity": {pref: [term(i + k) for i in range(k)]}}


def _cluster(nodes: int = 6, heavy: int = 20, terms: int = 10, min_member: int | None = None,
             plain: int = 3):
    """`nodes` 8-cpu nodes, `plain` small jobs and one heavy gang of 1-cpu tasks with many terms."""
    ns = [node(f"n{i}", cpu="8", memory="64Gi", labels={HOST: f"n{i}"}) for i in range(nodes)]
    running = [task(f"r{i}", cpu="1", status="Running", node=f"n{i % nodes}", labels={"app": f"x{i % 7}"})
               for i in range(2 * nodes)]
    jobs = [job("running", queue="q", phase="Running", tasks=running)]
    jobs += [job(f"plain{k}", queue="q", min_available=2, tasks=replicas(f"p{k}", 2, cpu="1"))
             for k in range(plain)]
    if heavy:
        jobs.append(job("heavy", queue="h", min_available=heavy if min_member is None else min_member,
                        tasks=replicas("h", heavy, cpu="1", labels={"app": "x0"}, affinity=_terms(terms))))
    return snapshot(nodes=ns, queues=[queue("q"), queue("h")], jobs=jobs)


def test_over_budget_job_is_deferred_and_the_others_are_scheduled_as_without_it():
    alone = run_session(_cluster(heavy=0, plain=3), work_budget=0)
    result = run_session(_cluster(heavy=20, terms=10), work_budget=2_000)
    reason = result.reasons["ns/heavy"]
    assert reason.code is ReasonCode.Deferred
    assert "work budget (2,000 units" in reason.message
    assert reason.details["work_budget"] == 2_000
    assert reason.details["work_units"] > 2_000
    assert result.work["deferred"] == {"ns/heavy": reason.details["work_units"]}
    assert not [uid for uid in result.binds if uid.startswith("ns/h-")]
    assert not result.job_errors  # deferred, not set aside
    plain = {uid: n for uid, n in result.binds.items() if uid.startswith("ns/p")}
    assert plain == alone.binds
    assert result.work["budget"] == 2_000
    assert result.work["max_job"]["units"] <= 2_000


def test_within_budget_the_decisions_are_those_without_a_budget():
    free = run_session(_cluster(heavy=6, terms=3, nodes=4), work_budget=0)
    bounded = run_session(_cluster(heavy=6, terms=3, nodes=4), work_budget=10_000_000)
    assert bounded.binds == free.binds
    assert {u: r.code for u, r in bounded.reasons.items()} == {u: r.code for u, r in free.reasons.items()}
    assert not bounded.work["deferred"]


def test_an_elastic_job_keeps_what_it_committed_before_the_budget_ran_out():
    # min_member 1: every round that places a task commits it; the round that runs out is undone.
    result = run_session(_cluster(heavy=30, terms=10, min_member=1, nodes=6), work_budget=5_000)
    placed = [uid for uid in result.binds if uid.startswith("ns/h-")]
    assert 0 < len(placed) < 30
    assert result.reasons["ns/heavy"].code is ReasonCode.Deferred


def test_meter_refuses_the_charge_that_would_pass_the_budget():
    meter = WorkMeter(10)
    meter.charge(4)  # outside any job: counted, never refused
    meter.job = "ns/j"
    meter.charge(10)
    try:
        meter.charge(1)
    except WorkBudgetExceeded as exc:
        assert (exc.job_uid, exc.used, exc.budget) == ("ns/j", 11, 10)
    else:
        raise AssertionError("not refused")
    assert (meter.total, meter.by_job) == (14, {"ns/j": 10})
    assert WorkMeter(0).budget == 0  # unlimited


def test_default_budget_is_settable_and_restorable():
    try:
        set_default_budget(123)
        assert default_budget() == 123
        assert WorkMeter().budget == 123
    finally:
        set_default_budget(None)
    assert default_budget() == DEFAULT_WORK_BUDGET


def test_inter_pod_rules_counts_terms_and_constraints():
    spread = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}]
    t = task("t", affinity={**_terms(3), "nodeAffinity": {}}, topology_spread_constraints=spread)
    assert inter_pod_rules(t) == 7
    assert inter_pod_rules(task("plain")) == 0


@settings(max_examples=40)
@given(nodes=st.integers(2, 10), heavy=st.integers(1, 40), terms=st.integers(0, 30),
       min_member=st.integers(1, 40), budget=st.sampled_from((500, 3_000, 20_000)))
def test_cycle_work_is_linear_in_nodes_and_tasks_whatever_one_job_contains(nodes, heavy, terms, min_member,
                                                                           budget):
    """units(cycle) <= units(cycle without the heavy job) + its budget + 8 * (nodes + tasks)."""
    without = run_session(_cluster(nodes=nodes, heavy=0), work_budget=budget).work["units"]
    result = run_session(_cluster(nodes=nodes, heavy=heavy, terms=terms, min_member=min(min_member, heavy)),
                         work_budget=budget)
    tasks = 2 * nodes + 6 + heavy
    assert result.work["units"] <= without + budget + 8 * (nodes + tasks)
    for uid, used in result.work["deferred"].items():
        assert used > budget and uid == "ns/heavy"

"""Topology-aware preemption (enableTopologyAwarePreemption): dry runs, minimal victims, choice."""

from __future__ import annotations

import pytest

from scheduler_core.actions.preempt.topology import (
    Candidate,
    TopologyOptions,
    select_candidate,
    topology_options,
)
from scheduler_core.framework.conf import parse_conf
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

ANTI_X = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def _tiers(predicates: dict | None = None, proportion: dict | None = None) -> list:
    return [["priority", "gang"], [{"name": "predicates", **(predicates or {})},
                                   {"name": "proportion", **(proportion or {})}]]


def _cfg(predicates: dict | None = None, proportion: dict | None = None, **args):
    return conf("preempt", _tiers(predicates, proportion),
                preempt={"enableTopologyAwarePreemption": True, **args})


def _running(name: str, node_name: str, cpu: str, priority: int = 1, **kw):
    return task(name, cpu=cpu, memory="1Gi", status="Running", node=node_name, priority=priority, **kw)


def _host(name: str, cpu: str = "4"):
    return node(name, cpu=cpu, labels={"kubernetes.io/hostname": name})


def _high(cpu: str, **kw):
    preemptor = task("h-0", cpu=cpu, memory="1Gi", priority=100, **kw)
    return job("high", priority=100, created=2.0, tasks=[preemptor])


def _low(*tasks, name: str = "low", priority: int = 1):
    return job(name, priority=priority, created=1.0, phase="Running", min_available=0, tasks=list(tasks))


def test_reprieve_leaves_the_minimal_victim_set():
    # Removed in victim order l-2, l-1, l-0 until 3 cpu are free; put back l-0 (no: 2 free),
    # l-1 (yes: 3 free), l-2 (no): victims l-0 and l-2. The normal path evicts all three.
    low = _low(_running("l-0", "n1", "2"), _running("l-1", "n1", "1"), _running("l-2", "n1", "1"))
    snap = snapshot(nodes=[_host("n1")], jobs=[low, _high("3")])
    result = run(snap, _cfg())
    assert sorted(result.evictions) == ["ns/l-0", "ns/l-2"]
    assert result.pipelined == {"ns/h-0": "n1"}
    normal = run(snapshot(nodes=[_host("n1")], jobs=[
        _low(_running("l-0", "n1", "2"), _running("l-1", "n1", "1"), _running("l-2", "n1", "1")),
        _high("3")]), conf("preempt", _tiers()))
    assert sorted(normal.evictions) == ["ns/l-0", "ns/l-1", "ns/l-2"]


def test_a_preemptor_that_fits_without_evictions_is_not_pipelined():
    low = _low(_running("l-0", "n1", "1"))
    result = run(snapshot(nodes=[_host("n1")], jobs=[low, _high("1")]), _cfg())
    assert result.evictions == [] and result.pipelined == {}


def _two_nodes():
    # n1 holds a priority-5 victim, n2 a priority-1 one: n2 is cheaper, n1 sorts first.
    mid = _low(_running("m-0", "n1", "4", priority=5), name="mid", priority=5)
    low = _low(_running("l-0", "n2", "4", priority=1))
    return snapshot(nodes=[_host("n1"), _host("n2")], jobs=[mid, low, _high("2")])


def test_k_candidates_then_the_lowest_victim_priority_wins():
    result = run(_two_nodes(), _cfg(minCandidateNodesAbsolute=2))
    assert result.evictions == ["ns/l-0"] and result.pipelined == {"ns/h-0": "n2"}


def test_default_k_of_two_nodes_is_one_the_first_candidate_by_name():
    result = run(_two_nodes(), _cfg())
    assert result.evictions == ["ns/m-0"] and result.pipelined == {"ns/h-0": "n1"}


def test_anti_affinity_victim_alone_is_taken():
    low = _low(_running("l-0", "n1", "1", labels={"app": "x"}), _running("l-1", "n1", "1"),
               _running("l-2", "n1", "1"))
    snap = snapshot(nodes=[_host("n1")], jobs=[low, _high("1", affinity=ANTI_X)])
    result = run(snap, _cfg())
    assert result.evictions == ["ns/l-0"] and result.pipelined == {"ns/h-0": "n1"}


def test_a_predicates_view_that_never_sees_evictions_keeps_the_affinity_conflict():
    low = _low(_running("l-0", "n1", "1", labels={"app": "x"}), _running("l-1", "n1", "1"))
    snap = snapshot(nodes=[_host("n1")], jobs=[low, _high("1", affinity=ANTI_X)])
    frozen = {"enabledPreemptable": False, "enabledAllocatable": False}
    result = run(snap, _cfg(predicates=frozen))
    assert result.evictions == [] and result.pipelined == {}


@pytest.mark.parametrize(("proportion", "evicted"), [
    ({}, ["ns/l-1"]),
    # proportion without enabledPredicate has no simulated view: the preemptor never "fits",
    # so no victim is reprieved (upstream only re-checks affinity after the removals).
    ({"enabledPredicate": False}, ["ns/l-0", "ns/l-1"]),
])
def test_a_queue_plugin_without_a_view_reprieves_nobody(proportion, evicted):
    low = _low(_running("l-0", "n1", "2"), _running("l-1", "n1", "2"))
    result = run(snapshot(nodes=[_host("n1")], jobs=[low, _high("2")]), _cfg(proportion=proportion))
    assert sorted(result.evictions) == evicted and result.pipelined == {"ns/h-0": "n1"}


@pytest.mark.parametrize(("n", "options", "k"), [
    (2, TopologyOptions(True), 1), (50, TopologyOptions(True), 5), (5000, TopologyOptions(True), 100),
    (3, TopologyOptions(True, min_absolute=10), 3), (0, TopologyOptions(True), 0),
    (40, TopologyOptions(True, min_percentage=50, min_absolute=1, max_absolute=15), 15),
])
def test_number_of_candidates(n, options, k):
    assert options.candidates_wanted(n) == k


def test_candidate_order_priority_sum_count_start_then_name():
    def t(prio: int, started: float | None = None):
        return task("v", priority=prio, started=started)

    pick = select_candidate([Candidate(0, [t(5)]), Candidate(1, [t(1), t(1)])], now=100.0)
    assert pick.row == 1  # the first victim's priority decides first
    pick = select_candidate([Candidate(0, [t(3), t(1)]), Candidate(1, [t(3), t(0)])], now=100.0)
    assert pick.row == 1  # then the sum of priorities
    pick = select_candidate([Candidate(0, [t(3, 5.0)]), Candidate(1, [t(3, 9.0)])], now=100.0)
    assert pick.row == 1  # then the latest earliest start among the top-priority victims
    pick = select_candidate([Candidate(1, [t(3)]), Candidate(0, [t(3)])], now=100.0)
    assert pick.row == 0  # then the first node by name


def test_arguments_are_accepted_and_bad_values_ignored_with_a_warning():
    data = {"actions": "preempt", "tiers": [{"plugins": [{"name": "priority"}]}],
            "configurations": [{"name": "preempt", "arguments": {
                "enableTopologyAwarePreemption": True, "minCandidateNodesPercentage": "20",
                "minCandidateNodesAbsolute": 2, "maxCandidateNodesAbsolute": 50,
                "topologyAwarePreemptWorkerNum": 16}}]}
    expected = (TopologyOptions(True, 20, 2, 50), [])
    assert topology_options(parse_conf(data).configurations["preempt"]) == expected
    data["configurations"][0]["arguments"].update(maxCandidateNodesAbsolute="lots",
                                                  enableTopologyAwarePreemption="yes")
    args = parse_conf(data).configurations["preempt"]  # never refused
    warnings = ["preempt: enableTopologyAwarePreemption 'yes' is not true or false; the default false "
                "is used",
                "preempt: maxCandidateNodesAbsolute 'lots' is not an integer; the default 100 is used"]
    assert topology_options(args) == (TopologyOptions(False, 20, 2, 100), warnings)
    low = _low(_running("l-0", "n1", "4"))
    result = run(snapshot(nodes=[_host("n1")], jobs=[low, _high("2")]), parse_conf({**data, "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]}]}))
    assert result.warnings == warnings
    assert result.evictions == ["ns/l-0"]  # the normal path (the switch is ignored)


@pytest.mark.parametrize(("value", "enabled"), [(True, True), ("true", True), ("1", True), ("False", False)])
def test_the_switch_reads_go_bool_spellings(value, enabled):
    assert topology_options({"enableTopologyAwarePreemption": value})[0].enabled is enabled

"""Scheduler sharding as a session input (framework.sharding): the value, the session's view,
hard mode's fit error in every action's predicate pass, soft mode's groups, and mode none
deciding exactly as no sharding at all."""

from __future__ import annotations

import dataclasses

import pytest

from scheduler_core.framework.node_search import NodeScan, SearchOptions
from scheduler_core.framework.session import open_session
from scheduler_core.framework.sharding import NOT_IN_SHARD, Sharding, ShardView
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot, task

TIERS = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]
LEAST = [["priority", "gang"], ["predicates", {"name": "nodeorder", "arguments": {
    "leastrequested.weight": 1, "balancedresource.weight": 0}}]]


def test_the_value_checks_its_mode_and_keeps_names_as_a_set():
    with pytest.raises(ValueError, match="unknown sharding mode 'firm'"):
        Sharding("firm")
    value = Sharding.of("soft", "shard-a", ["n3", "n1", "n3"])
    assert value.nodes_in_shard == frozenset({"n1", "n3"})
    assert value.to_json() == {"mode": "soft", "shard_name": "shard-a", "nodes_in_shard": ["n1", "n3"]}
    assert Sharding().mode == "none"


def test_the_view_over_the_rows():
    snap = snapshot(nodes=[node("n2"), node("n1"), node("n3")])
    ssn = open_session(snap, conf("allocate", TIERS), sharding=Sharding.of("hard", "a", ["n3", "gone"]))
    view = ssn.shard
    assert view.in_shard.tolist() == [False, False, True]  # rows in name order; "gone" ignored
    assert view.failure[0] == NOT_IN_SHARD and view.failure[1].tolist() == [True, True, False]
    assert view.groups == (None,)
    soft = ShardView(Sharding.of("soft", "a", ["n1"]), ssn.node_table)
    assert [g.tolist() for g in soft.groups] == [[True, False, False], [False, True, True]]
    assert soft.ordered(soft.in_shard | True) == [0, 1, 2]
    assert soft.same_group(2).tolist() == [False, True, True]
    none = ShardView(None, ssn.node_table)
    assert none.failure is None and none.groups == (None,) and none.summary({}) is None


def test_hard_mode_fails_the_rows_outside_first_even_without_predicate_plugins():
    snap = snapshot(nodes=[node("n1", cpu="1"), node("n2"), node("n3")],
                    jobs=[job("j", tasks=[task("t", cpu="2")])])
    ssn = open_session(snap, conf("allocate", [["gang"]]), sharding=Sharding.of("hard", "a", ["n1", "n3"]))
    pred = ssn.predicate(snap.jobs["ns/j"].tasks["ns/t"])
    assert pred.ok_mask.tolist() == [True, False, True]
    assert pred.counts() == {NOT_IN_SHARD: 1}


def test_hard_mode_reason_quotes_the_fit_error():
    snap = snapshot(nodes=[node("n1", cpu="2"), node("n2", cpu="8")],
                    jobs=[job("j", tasks=[task("t", cpu="4")])])
    result = run_session(snap, conf("enqueue, allocate, backfill", TIERS),
                         sharding=Sharding.of("hard", "a", ["n1"]))
    assert result.binds == {}
    assert result.reasons["ns/j"].message == (
        "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node isn't in scheduler node shard.")
    assert result.to_json()["sharding"] == {"mode": "hard", "shard_name": "a", "nodes_in_shard": ["n1"],
                                            "placed_outside_shard": {}}


def _mixed():
    """Placements in every action: fits, pipelining, best effort, victims across two queues."""
    held = [task("r0", cpu="3", status="Running", node="n0"),
            task("r1", cpu="2", status="Releasing", node="n1"),
            task("r2", cpu="4", status="Running", node="n2")]
    return snapshot(nodes=[node(f"n{i}", cpu="4") for i in range(4)],
                    jobs=[job("old", tasks=held, phase="Running", priority=0),
                          job("a", tasks=replicas("a", 3, cpu="2"), priority=10),
                          job("b", tasks=replicas("b", 2, cpu=None, memory=None), priority=5)])


@pytest.mark.parametrize("actions", ["enqueue, allocate, backfill", "allocate, preempt, reclaim, backfill"])
def test_mode_none_decides_as_no_sharding(actions):
    cfg = conf(actions, [["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"]])
    plain = run_session(_mixed(), cfg).to_json()
    named = run_session(_mixed(), cfg, sharding=Sharding.of("none", "a", ["n3"])).to_json()
    assert named.pop("sharding") == {"mode": "none", "shard_name": "a", "nodes_in_shard": ["n3"]}
    for out in (plain, named):
        out.pop("timing")
    assert plain == named


def test_soft_mode_lists_what_went_outside():
    snap = snapshot(nodes=[node("n1", cpu="2"), node("n2", cpu="8")],
                    jobs=[job("j", tasks=[task("small", cpu="1"), task("big", cpu="4")])])
    result = run_session(snap, conf("allocate", LEAST), sharding=Sharding.of("soft", "a", ["n1"]))
    assert result.binds == {"ns/small": "n1", "ns/big": "n2"}
    assert result.sharding["placed_outside_shard"] == {"ns/big": "n2"}


def test_the_feasible_node_limit_counts_only_shard_nodes_as_feasible_in_hard_mode():
    # 6 equal nodes, K = 2: the scan keeps the first 2 feasible rows from the index and stops at
    # the 3rd; rows outside the shard (n0, n2, n4) are not feasible, so the scan skips them.
    cfg = dataclasses.replace(conf("allocate", LEAST),
                              options=SearchOptions(minimum_feasible_nodes=1, percentage_nodes_to_find=34))
    snap = snapshot(nodes=[node(f"n{i}") for i in range(6)], jobs=[job("j", tasks=[task("t")])])
    scan = NodeScan()
    result = run_session(snap, cfg, node_scan=scan, sharding=Sharding.of("hard", "a", ["n1", "n3", "n5"]))
    assert result.binds == {"ns/t": "n1"}  # kept n1, n3 (tied scores: the name first); stopped at n5
    assert scan.next_index == 0  # (5 + 1) % 6


def test_the_feasible_node_limit_in_soft_mode_groups_the_kept_rows():
    # K = 2 of 6: kept n0, n1 (the scan starts at 0, stops at n2); n1 is the shard's and wins
    # although n0 is emptier: groups are taken among the kept rows, not over every node.
    cfg = dataclasses.replace(conf("allocate", LEAST),
                              options=SearchOptions(minimum_feasible_nodes=1, percentage_nodes_to_find=34))
    nodes = [node("n0", cpu="16")] + [node(f"n{i}") for i in range(1, 6)]
    snap = snapshot(nodes=nodes, jobs=[job("j", tasks=[task("t")])])
    result = run_session(snap, cfg, node_scan=NodeScan(), sharding=Sharding.of("soft", "a", ["n1", "n5"]))
    assert result.binds == {"ns/t": "n1"}


def test_pod_slots_hold_in_hard_mode():
    # The shard's node has 2 pod slots; the third task waits rather than going outside.
    snap = snapshot(nodes=[node("n1", pods=2, cpu="16"), node("n2", cpu="16")],
                    jobs=[job("j", tasks=replicas("t", 3), min_available=1)])
    result = run_session(snap, conf("allocate, backfill", TIERS), sharding=Sharding.of("hard", "a", ["n1"]))
    assert sorted(result.binds.items()) == [("ns/t-0", "n1"), ("ns/t-1", "n1")]
    assert result.reasons["ns/j"].details["node_failures"] == {"Too many pods": 1, NOT_IN_SHARD: 1}


def test_soft_mode_runs_stop_where_the_group_changes():
    # n1 (shard, 4 cpu) and n2 (outside, 16 cpu): a run of identical tasks fills n1 first (the
    # shard's idle fits win whatever n2 scores), then goes on to n2.
    snap = snapshot(nodes=[node("n1"), node("n2", cpu="16")],
                    jobs=[job("j", tasks=replicas("t", 6), min_available=6)])
    result = run_session(snap, conf("allocate", LEAST), sharding=Sharding.of("soft", "a", ["n1"]))
    assert result.binds == {**{f"ns/t-{i}": "n1" for i in range(4)}, "ns/t-4": "n2", "ns/t-5": "n2"}


def test_score_recording_in_soft_mode_records_the_chosen_node():
    snap = snapshot(nodes=[node("n1"), node("n2", cpu="16")], jobs=[job("j", tasks=[task("t")])])
    result = run_session(snap, conf("allocate", LEAST), record_scores=True,
                         sharding=Sharding.of("soft", "a", ["n1"]))
    assert result.binds == {"ns/t": "n1"}
    assert result.node_scores["ns/t"].chosen == "n1"

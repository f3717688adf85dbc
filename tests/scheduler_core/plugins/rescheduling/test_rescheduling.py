"""rescheduling: lowNodeUtilization victims, thresholds as arguments, interval."""

from __future__ import annotations

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.model import PriorityClassInfo
from scheduler_core.plugins.rescheduling.rescheduling import parse_lnu
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

NOW = 100_000.0
# n1 runs six 1-cpu/1Gi tasks (60% of cpu, memory and pods), n2 one task (10%), n3 none.
PRIORITIES = {"t0": 5, "t1": 1, "t2": 3, "t3": 1, "t4": 9, "t5": 0}


def cluster(nodes=("n1", "n2", "n3"), **task_kw):
    hot = [task(name, cpu="1", memory="1Gi", status="Running", node="n1", priority=p, **task_kw)
           for name, p in PRIORITIES.items()]
    jobs = [job("hot", tasks=hot)]
    if "n2" in nodes:
        jobs.append(job("calm", tasks=[task("c0", cpu="1", memory="1Gi", status="Running", node="n2")]))
    return snapshot(nodes=[node(n, cpu="10", memory="10Gi", pods=10) for n in nodes], jobs=jobs, now=NOW)


def lnu(low=20, target=50, dims=("cpu", "memory", "pods"), **extra):
    params = {"thresholds": dict.fromkeys(dims, low), "targetThresholds": dict.fromkeys(dims, target),
              **extra}
    return {"name": "rescheduling", "arguments": {"strategies": [{"name": "lowNodeUtilization",
                                                                  "params": params}]}}


def victims(snap, plugin):
    ssn = open_session(snap, conf("preempt", [[plugin]]))
    return [t.name for t in ssn.victim_tasks()]


@pytest.mark.parametrize("low,target,expected", [
    (20, 50, ["t5"]),                    # one eviction brings n1 down to 50%
    (20, 30, ["t5", "t1", "t3"]),        # lowest priority first, then uid
    (5, 30, ["t5", "t1", "t3"]),         # only n3 is low: its headroom (3 cpu) still suffices
    (20, 70, []),                        # no node above the target
    (70, 80, []),                        # every node low
    (0, 30, ["t5", "t1", "t3"]),         # the empty n3 is at (not above) 0%: still low
])
def test_low_node_utilization_victims(low, target, expected):
    assert victims(cluster(), lnu(low, target)) == expected


def test_headroom_of_low_nodes_limits_evictions():
    # Only n2 is low, with 30% - 10% = 2 cpu of headroom: two victims, though n1 stays above 30%.
    assert victims(cluster(nodes=("n1", "n2")), lnu(20, 30)) == ["t5", "t1"]


def test_no_low_node_means_no_victims():
    assert victims(cluster(nodes=("n1",)), lnu(20, 30)) == []


def test_threshold_priority_and_preemptable_protect_tasks():
    assert victims(cluster(), lnu(20, 30, thresholdPriority=1)) == ["t5"]
    snap = cluster()
    snap.priority_classes["system-cluster-critical"] = PriorityClassInfo("system-cluster-critical", 1)
    assert victims(snap, lnu(20, 30)) == ["t5"]
    assert victims(cluster(preemptable=False), lnu(20, 30)) == []


def test_fresh_usage_metrics_replace_requests():
    snap = cluster()
    snap.nodes["n1"].usage, snap.nodes["n1"].usage_time = {"cpu": 40.0, "memory": 40.0}, NOW
    assert victims(snap, lnu(20, 50, dims=("cpu", "memory"))) == []
    snap.nodes["n1"].usage_time = NOW - 3600  # stale: back to requests (60%)
    assert victims(snap, lnu(20, 50, dims=("cpu", "memory"))) == ["t5"]


@pytest.mark.parametrize("last_run,interval,runs", [
    (None, None, True), (NOW - 300, None, True), (NOW - 299, None, False),
    (NOW - 60, "1m", True), (NOW - 60, "2m", False), (NOW - 60, 30, True),
])
def test_interval(last_run, interval, runs):
    plugin = lnu(20, 50)
    if last_run is not None:
        plugin["arguments"]["lastRun"] = last_run
    if interval is not None:
        plugin["arguments"]["interval"] = interval
    assert victims(cluster(), plugin) == (["t5"] if runs else [])


def test_defaults_and_flat_arguments():
    d = parse_lnu({})
    assert (d.thresholds, d.target_thresholds) == ({"cpu": 100.0, "memory": 100.0, "pods": 100.0},) * 2
    flat = {"name": "rescheduling", "arguments": {"thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                                                   "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50}}}
    assert victims(cluster(), flat) == ["t5"]
    assert victims(cluster(), {"name": "rescheduling"}) == []  # default thresholds: all 100%


def test_unsupported_strategy_warns_and_preempt_evicts_victims():
    plugin = lnu(20, 30)
    plugin["arguments"]["strategies"].append({"name": "offlineOnly"})
    result = run(cluster(), conf("preempt", [[plugin]]))
    assert result.warnings == ["rescheduling: strategy 'offlineOnly' is not supported; ignored"]
    assert sorted(result.evictions) == ["ns/t1", "ns/t3", "ns/t5"]

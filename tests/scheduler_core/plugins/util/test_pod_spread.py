"""Topology spread (filter and score), preferred pod affinity score, capacity ancestor reclaim."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.conf import ConfError, parse_conf
from scheduler_core.framework.session import open_session
from scheduler_core.plugins.capacity.reclaim import ancestors_up, parse_level
from scheduler_core.plugins.util.node_static import NodeStatic
from scheduler_core.plugins.util.pod_spread import (
    SPREAD_MISMATCH,
    SPREAD_MISSING_LABEL,
    pod_affinity_scores,
    spread_failures,
    spread_scores,
)
from scheduler_core.plugins.util.queue_attr import QueueAttr
from tests.scheduler_core.builders import conf, job, node, snapshot, task

ZONE = "zone"


def _spread(when: str = "DoNotSchedule", skew: int = 1, **extra) -> list[dict]:
    return [{"maxSkew": skew, "topologyKey": ZONE, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"app": "web"}}, **extra}]


def _session(zones: dict[str, str | None], running: dict[str, int], t):
    """Nodes n<i> with the given zone labels; `running[node]` app=web pods on each."""
    nodes = [node(n, labels={ZONE: z} if z else {}) for n, z in zones.items()]
    pods = [task(f"{n}-p{i}", status="Running", node=n, labels={"app": "web"}, cpu="100m")
            for n, k in running.items() for i in range(k)]
    jobs = [job("old", tasks=pods, phase="Running"), job("new", tasks=[t])]
    ssn = open_session(snapshot(nodes=nodes, jobs=jobs), conf("allocate", [["predicates", "nodeorder"]]))
    return ssn, NodeStatic(ssn.node_table)


def _rows(ssn, mask) -> list[str]:
    return [ssn.node_table.names[i] for i in np.flatnonzero(mask)]


@pytest.mark.parametrize(("running", "extra", "skewed"), [
    pytest.param({"a1": 2}, {}, ["a1", "a2"], id="zone-a-ahead"),
    pytest.param({"a1": 1}, {}, ["a1", "a2"], id="one-ahead-is-skew-2"),  # 1 + 1 - 0 > 1
    pytest.param({"a1": 1}, {"skew": 2}, [], id="within-max-skew"),
    pytest.param({"a1": 1, "b1": 1}, {}, [], id="balanced"),
    # Two domains exist (a, b) but minDomains 3: the global minimum counts as 0.
    pytest.param({"a1": 1, "b1": 1}, {"minDomains": 3}, ["a1", "a2", "b1"], id="min-domains"),
])
def test_do_not_schedule(running, extra, skewed):
    t = task("t", labels={"app": "web"}, topology_spread_constraints=_spread(**extra))
    ssn, static = _session({"a1": "a", "a2": "a", "b1": "b", "x": None}, running, t)
    got = dict(spread_failures(t, ssn.node_table, static))
    assert _rows(ssn, got[SPREAD_MISSING_LABEL]) == ["x"]
    assert _rows(ssn, got.get(SPREAD_MISMATCH, np.zeros(4, bool))) == skewed


def test_pods_of_other_namespaces_and_releasing_pods_do_not_count():
    t = task("t", labels={"app": "web"}, topology_spread_constraints=_spread())
    ssn, static = _session({"a1": "a", "b1": "b"}, {"a1": 2}, t)
    pods = list(ssn.jobs["ns/old"].tasks.values())
    pods[0].namespace = "elsewhere"
    stmt = ssn.statement()
    stmt.evict(pods[1], "preempt")  # Releasing: leaving
    assert SPREAD_MISMATCH not in dict(spread_failures(t, ssn.node_table, static))


def test_schedule_anyway_scores():
    # Zone a holds 0 matching pods, zone b 2 (n b1): weight ln(2 + 2); raw 0 and round(2.77) = 3.
    t = task("t", labels={"app": "web"}, topology_spread_constraints=_spread("ScheduleAnyway"))
    ssn, static = _session({"a1": "a", "b1": "b", "x": None}, {"b1": 2}, t)
    scores = spread_scores(t, ssn.node_table, static, ssn.node_table.all_rows())
    assert dict(zip(ssn.node_table.names, scores.tolist(), strict=True)) == {"a1": 100.0, "b1": 0.0, "x": 0.0}


def test_preferred_pod_affinity_scores():
    aff = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                           "topologyKey": ZONE}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                              "topologyKey": ZONE}}]}}
    t = task("t", affinity=aff)
    # zone a: 2 pods -> 2 * (10 - 5) = 10; zone b: 1 pod -> 5; zone c: none -> 0.
    ssn, static = _session({"a1": "a", "b1": "b", "c1": "c"}, {"a1": 2, "b1": 1}, t)
    scores = pod_affinity_scores(t, ssn.node_table, static, ssn.node_table.all_rows())
    assert scores.tolist() == [100.0, 50.0, 0.0]


# -- capacity ancestorReclaimLevel -----------------------------------------------------------------
@pytest.mark.parametrize(("args", "level"), [
    ({}, 0), ({"ancestorReclaimLevel": 2}, 2), ({"ancestorReclaimLevel": "1"}, 1),
    ({"ancestorReclaimLevel": None}, 0)])
def test_parse_level(args, level):
    assert parse_level(args) == level


@pytest.mark.parametrize("bad", [-1, "x", 1.5, True])
def test_bad_level_is_a_conf_error(bad):
    data = {"actions": "reclaim", "tiers": [{"plugins": [
        {"name": "capacity", "enableHierarchy": True, "arguments": {"ancestorReclaimLevel": bad}}]}]}
    with pytest.raises(ConfError, match="ancestorReclaimLevel must be a non-negative integer"):
        parse_conf(data)


@pytest.mark.parametrize(("level", "expected"), [(0, []), (1, ["p"]), (2, ["p", "g"]), (5, ["p", "g"])])
def test_ancestors_up_never_reaches_the_root(level, expected):
    assert ancestors_up(QueueAttr(name="leaf", ancestors=["root", "g", "p"]), level) == expected

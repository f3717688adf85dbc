"""predicates: each filter's failing rows and Kubernetes wording, caching, proportional option."""

from __future__ import annotations

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.predicates.predicates import (
    AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    TOO_MANY_PODS,
    UNSCHEDULABLE,
    tolerates,
)
from tests.scheduler_core.builders import GPU, conf, job, node, snapshot, task


def _failures(nodes, t, args=None, running=()):
    """{reason: [node names]} of the predicate plugin for task t."""
    jobs = [job("j", tasks=[t])]
    if running:
        jobs.append(job("r", tasks=list(running), phase="Running"))
    ssn = open_session(
        snapshot(nodes=nodes, jobs=jobs),
        conf("allocate", [[{"name": "predicates", "arguments": args or {}}]]),
    )
    res = ssn.predicate(t)
    names = ssn.node_table.names
    return {reason: [names[i] for i in mask.nonzero()[0]] for reason, mask in res.failures}


def _req(key, op, values=None):
    e = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def _affinity(*terms):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


LABELLED = [
    ("a", {"zone": "x", "cores": "16"}),
    ("b", {"zone": "y", "cores": "8"}),
    ("c", {"zone": "z"}),
    ("d", {"cores": "big"}),
]


@pytest.mark.parametrize(
    "affinity,failing",
    [
        (_affinity([_req("zone", "In", ["x", "y"])]), ["c", "d"]),
        (_affinity([_req("zone", "NotIn", ["x"])]), ["a"]),  # no label counts as NotIn
        (_affinity([_req("zone", "Exists")]), ["d"]),
        (_affinity([_req("zone", "DoesNotExist")]), ["a", "b", "c"]),
        (_affinity([_req("cores", "Gt", ["8"])]), ["b", "c", "d"]),  # "big" is not an integer
        (_affinity([_req("cores", "Lt", ["16"])]), ["a", "c", "d"]),
        # terms are ORed, expressions inside a term ANDed
        (_affinity([_req("zone", "In", ["x"])], [_req("zone", "In", ["z"])]), ["b", "d"]),
        (_affinity([_req("zone", "In", ["x", "y"]), _req("cores", "Gt", ["10"])]), ["b", "c", "d"]),
        (_affinity([]), ["a", "b", "c", "d"]),  # an empty term matches nothing
        (
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [_req("metadata.name", "In", ["b", "c"])]}]
                    }
                }
            },
            ["a", "d"],
        ),
    ],
)
def test_required_node_affinity(affinity, failing):
    nodes = [node(n, labels=lb) for n, lb in LABELLED]
    assert _failures(nodes, task("t", affinity=affinity)) == {AFFINITY_MISMATCH: failing}


def test_node_selector_and_affinity_both_apply():
    nodes = [node(n, labels=lb) for n, lb in LABELLED]
    t = task("t", node_selector={"zone": "x"}, affinity=_affinity([_req("cores", "Exists")]))
    assert _failures(nodes, t) == {AFFINITY_MISMATCH: ["b", "c", "d"]}


GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
SPOT_TAINT = {"key": "spot", "value": "yes", "effect": "NoExecute"}
SOFT_TAINT = {"key": "soft", "value": "1", "effect": "PreferNoSchedule"}


@pytest.mark.parametrize(
    "tolerations,expected",
    [
        (
            [],
            {
                "node(s) had untolerated taint {gpu: true}": ["g", "gs"],
                "node(s) had untolerated taint {spot: yes}": ["s"],
            },
        ),
        (
            [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            {"node(s) had untolerated taint {spot: yes}": ["gs", "s"]},
        ),
        (
            [{"key": "gpu", "operator": "Equal", "value": "false"}],
            {
                "node(s) had untolerated taint {gpu: true}": ["g", "gs"],
                "node(s) had untolerated taint {spot: yes}": ["s"],
            },
        ),
        (
            [
                {"key": "gpu", "operator": "Exists"},
                {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
            ],
            {},
        ),
        ([{"operator": "Exists"}], {}),  # empty key with Exists tolerates everything
    ],
)
def test_taints_grouped_by_first_untolerated(tolerations, expected):
    nodes = [
        node("g", taints=[GPU_TAINT]),
        node("gs", taints=[GPU_TAINT, SPOT_TAINT]),
        node("p", taints=[SOFT_TAINT]),
        node("s", taints=[SPOT_TAINT]),
    ]
    assert _failures(nodes, task("t", tolerations=tolerations)) == expected


@pytest.mark.parametrize(
    "toleration,taint,ok",
    [
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        (
            {"key": "k", "value": "v", "effect": "NoExecute"},
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            False,
        ),
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "other", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),  # kube: empty key, Equal
    ],
)
def test_tolerates(toleration, taint, ok):
    assert tolerates(toleration, taint) is ok


def test_unschedulable_first_then_selector_then_pods():
    nodes = [
        node("a", unschedulable=True, labels={"zone": "x"}),
        node("b"),
        node("c", pods=1, labels={"zone": "x"}),
        node("d", labels={"zone": "x"}),
    ]
    running = [task("r0", status="Running", node="c")]
    t = task("t", node_selector={"zone": "x"})
    assert _failures(nodes, t, running=running) == {
        UNSCHEDULABLE: ["a"],
        AFFINITY_MISMATCH: ["b"],
        TOO_MANY_PODS: ["c"],
    }


def test_switches_turn_affinity_and_taints_off():
    nodes = [node("a", taints=[GPU_TAINT]), node("b", labels={"zone": "x"})]
    t = task("t", node_selector={"zone": "x"})
    args = {"predicate.NodeAffinityEnable": False, "predicate.TaintTolerationEnable": "false"}
    assert _failures(nodes, t, args) == {}


PROP = {
    "predicate.ProportionalEnable": True,
    "predicate.resources": GPU,
    f"predicate.resources.{GPU}.cpu": 4,
    f"predicate.resources.{GPU}.memory": 8,
}


@pytest.mark.parametrize(
    "t,failing",
    [
        # gpu node with 2 idle gpus keeps 8 cores and 16 GB back for gpu tasks: 10 cores, 32Gi idle
        (task("t", cpu="2", memory="1Gi"), []),
        (task("t", cpu="3", memory="1Gi"), ["g"]),  # 7 cores left < 8
        (task("t", cpu="1", memory="17Gi"), []),  # 15Gi = 16.1e9 bytes left >= 16e9
        (task("t", cpu="1", memory="18Gi"), ["g"]),  # 14Gi = 15.0e9 bytes left < 16e9
        (task("t", cpu="3", memory="1Gi", gpu=1), []),  # gpu tasks are not limited
    ],
)
def test_proportional(t, failing):
    nodes = [node("g", cpu="10", memory="32Gi", gpu=2), node("plain", cpu="10", memory="32Gi")]
    expected = {f"proportional of resource {GPU} check failed": failing} if failing else {}
    assert _failures(nodes, t, PROP) == expected


def test_static_part_cached_per_sched_key():
    nodes = [node("a", labels={"zone": "x"}), node("b")]
    t1, t2 = task("t1", node_selector={"zone": "x"}), task("t2", node_selector={"zone": "x"})
    ssn = open_session(
        snapshot(nodes=nodes, jobs=[job("j", tasks=[t1, t2])]), conf("allocate", [["predicates"]])
    )
    plugin = ssn.plugins["predicates"]
    assert ssn.predicate(t1).ok_mask.tolist() == [True, False]
    assert ssn.predicate(t2).ok_mask.tolist() == [True, False]
    assert len(plugin._cache) == 1


def _pod_term(labels, key="kubernetes.io/hostname", namespaces=None):
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    if namespaces:
        term["namespaces"] = namespaces
    return term


ZONES = [("n1", "a"), ("n2", "a"), ("n3", "b"), ("n4", None)]


def _zoned():
    return [node(n, labels={"kubernetes.io/hostname": n, **({"zone": z} if z else {})}) for n, z in ZONES]


@pytest.mark.parametrize(
    "affinity,labels,expected",
    [
        # anti-affinity per host against the running app=web pod on n1
        (
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "web"})]
                }
            },
            {},
            {POD_ANTI_AFFINITY: ["n1"]},
        ),
        # per zone: n1 and n2 share zone a; n4 has no zone label, so anti-affinity cannot apply there
        (
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "web"}, "zone")]
                }
            },
            {},
            {POD_ANTI_AFFINITY: ["n1", "n2"]},
        ),
        # affinity per zone: only zone a has an app=web pod
        (
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "web"}, "zone")]
                }
            },
            {},
            {POD_AFFINITY: ["n3", "n4"]},
        ),
        # no app=db pod anywhere and the task is not app=db itself: nowhere
        (
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "db"}, "zone")]
                }
            },
            {},
            {POD_AFFINITY: ["n1", "n2", "n3", "n4"]},
        ),
        # ... but the first pod of a self-affine group may go to any node with the topology key
        (
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "db"}, "zone")]
                }
            },
            {"app": "db"},
            {POD_AFFINITY: ["n4"]},
        ),
        # the term's namespaces: the web pod lives in "ns", not in "other"
        (
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _pod_term({"app": "web"}, namespaces=["other"])
                    ]
                }
            },
            {},
            {},
        ),
    ],
)
def test_pod_affinity(affinity, labels, expected):
    running = [task("r0", status="Running", node="n1", labels={"app": "web"})]
    t = task("t", affinity=affinity, labels=labels)
    assert _failures(_zoned(), t, running=running) == expected


def test_existing_pods_anti_affinity_and_session_placements():
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_pod_term({"app": "db"}, "zone")]
        }
    }
    running = [task("r0", status="Running", node="n3", labels={"app": "web"}, affinity=anti)]
    newcomer = task("t", labels={"app": "db"})
    assert _failures(_zoned(), newcomer, running=running) == {EXISTING_ANTI_AFFINITY: ["n3"]}
    # a task placed in the session counts too (and so does the class representative itself)
    t1 = task("t1", labels={"app": "db"}, affinity=anti)
    ssn = open_session(
        snapshot(nodes=_zoned(), jobs=[job("j", tasks=[t1])]), conf("allocate", [["predicates"]])
    )
    assert ssn.predicate(t1).counts() == {}
    ssn.allocate(t1, "n1")
    assert ssn.predicate(t1).counts() == {EXISTING_ANTI_AFFINITY: 2}  # zone a: n1, n2

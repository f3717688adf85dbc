"""Every plugin's placement signature is honest: tasks equal on the fields it declared get equal answers.

allocate shares one cached placement state between tasks the enabled plugins cannot tell apart
(framework.signature). For each registered plugin that registers predicate / node-order /
batch-node-order callbacks, on random small clusters: two tasks that differ anywhere except in
the fields its signature declares (for that session) must get identical predicate masks and
identical scores.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.registry import load_all, plugin_builders
from scheduler_core.framework.session import open_session
from scheduler_core.framework.signature import FIELDS, session_has_inter_pod_terms
from tests.conftest import profiled
from tests.scheduler_core.builders import conf, job, node, snapshot, task

GPU = "nvidia.com/gpu"
NOW = 1_000.0
# Extra argument sets that switch on a plugin's optional paths (the default set is always tried).
VARIANTS: dict[str, list[dict]] = {
    "predicates": [{"predicate.ProportionalEnable": True, "predicate.resources": GPU,
                    f"predicate.resources.{GPU}.cpu": 1, f"predicate.resources.{GPU}.memory": 1}],
    "nodeorder": [{"mostrequested.weight": 2, "leastrequested.weight": 0, "podaffinity.weight": 3}],
    "binpack": [{"binpack.resources": GPU, f"binpack.resources.{GPU}": 3}],
}


def _placement_plugins() -> list[str]:
    """Registered plugins that register at least one placement callback when a session opens."""
    load_all()
    found = []
    for name in sorted(plugin_builders):
        if name.startswith("_t_"):
            continue
        ssn = open_session(snapshot(nodes=[node("n1")]), conf("allocate", [[name]]))
        if ssn.placement_signatures():
            found.append(name)
    return found


PLUGINS = _placement_plugins()
CASES = [pytest.param(name, args, id=f"{name}-{i}")
         for name in PLUGINS for i, args in enumerate([{}, *VARIANTS.get(name, [])])]


def test_every_builtin_placement_plugin_declares_a_signature():
    assert PLUGINS  # predicates, nodeorder, binpack, usage at least
    for name in PLUGINS:
        ssn = open_session(snapshot(nodes=[node("n1")]), conf("allocate", [[name]]))
        assert [sig for _, _, sig in ssn.placement_signatures() if sig is None] == [], name


# -- random clusters and task pairs ---------------------------------------------------------------
def _term(app: str, key: str = "zone") -> dict:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


AFFINITIES = [
    None,
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
    {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}}]}},
    {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("db")]}},
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("web")]}},
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "podAffinityTerm": _term("web", "rack")}]}},
]
SPREADS = [
    [],
    [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
      "labelSelector": {"matchLabels": {"app": "web"}}}],
    [{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway",
      "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["job"]}],
]
TOLERATIONS = [[], [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
               [{"key": "spot", "operator": "Exists"}]]
TAINTS = [{"key": GPU, "value": "present", "effect": "NoSchedule"},
          {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
          {"key": "dedicated", "value": "infra", "effect": "NoExecute"}]

task_specs = st.fixed_dictionaries({
    "resreq": st.sampled_from([("500m", "1Gi", None), ("1", "2Gi", None), ("2", "1Gi", "1"),
                               ("1", "1Gi", None)]),
    "node_selector": st.sampled_from([{}, {"zone": "a"}, {"rack": "r1"}]),
    "tolerations": st.sampled_from(TOLERATIONS),
    "affinity": st.sampled_from(AFFINITIES),
    "topology_spread_constraints": st.sampled_from(SPREADS),
    "labels": st.sampled_from([{"app": "web"}, {"app": "db"}, {"app": "web", "job": "x"}, {}]),
    "priority": st.sampled_from([0, 5]),
    "namespace": st.sampled_from(["ns1", "ns2"]),
})


@st.composite
def clusters(draw):
    """(nodes, running jobs): 1-5 nodes with labels, taints, pods limits, usage; 0-2 tasks each."""
    nodes, running = [], []
    for i in range(draw(st.integers(1, 5))):
        labels = {"zone": draw(st.sampled_from(["a", "b"]))}
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
        usage = draw(st.sampled_from([None, {"cpu": 10.0, "memory": 90.0}, {"cpu": 95.0, "memory": 5.0}]))
        nodes.append(node(f"n{i}", cpu=draw(st.sampled_from(["2", "4", "8"])), memory="8Gi",
                          pods=draw(st.sampled_from([2, 3, 110])), gpu=draw(st.sampled_from([None, "2"])),
                          labels=labels,
                          taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=str)),
                          unschedulable=draw(st.booleans()) and i > 0,
                          usage=usage, usage_time=NOW if usage else None))
        for k in range(draw(st.integers(0, 2))):
            t = task(f"r{i}-{k}", cpu="500m", memory="1Gi", status="Running", node=f"n{i}",
                     labels={"app": draw(st.sampled_from(["web", "db"]))},
                     affinity=draw(st.sampled_from([None, AFFINITIES[4]])))
            running.append(job(f"run{i}-{k}", tasks=[t], namespace=draw(st.sampled_from(["ns1", "ns2"]))))
    return nodes, running


def _task(name: str, spec: dict):
    cpu, memory, gpu = spec["resreq"]
    return task(name, cpu=cpu, memory=memory, gpu=gpu, node_selector=dict(spec["node_selector"]),
                tolerations=list(spec["tolerations"]), affinity=spec["affinity"],
                topology_spread_constraints=list(spec["topology_spread_constraints"]),
                labels=dict(spec["labels"]), priority=spec["priority"])


def _session(name: str, args: dict, cluster, first: dict, second: dict):
    nodes, running = cluster
    jobs = [*running, job("one", tasks=[_task("t1", first)], namespace=first["namespace"]),
            job("two", tasks=[_task("t2", second)], namespace=second["namespace"])]
    ssn = open_session(snapshot(nodes=nodes, jobs=jobs, now=NOW),
                       conf("allocate", [[{"name": name, "arguments": args}]]))
    t1, t2 = ssn.jobs[f"{first['namespace']}/one"], ssn.jobs[f"{second['namespace']}/two"]
    return ssn, next(iter(t1.tasks.values())), next(iter(t2.tasks.values()))


def _answers(ssn, kind: str, name: str, t, mask: np.ndarray) -> list:
    table = ssn.node_table
    for plugin, fn in ssn.enabled_fns(kind)[0]:
        if plugin != name:
            continue
        if kind == "predicate":
            return [(reason, m.tolist()) for reason, m in fn[0](t, table)]
        return [fn(t, table, np.ones(len(table), dtype=bool)).tolist(), fn(t, table, mask).tolist()]
    raise AssertionError(f"{name} registered no {kind} callback")


@pytest.mark.parametrize(("name", "args"), CASES)
@settings(profiled(settings(max_examples=30)))
@given(cluster=clusters(), first=task_specs, other=task_specs, mask_bits=st.integers(0, 31))
def test_tasks_equal_under_the_signature_get_equal_answers(name, args, cluster, first, other, mask_bits):
    # The session decides whether inter-pod fields count; `other` takes `first`'s value for every
    # field that may count, which can only turn inter-pod terms off (first keeps its own).
    ssn, _, _ = _session(name, args, cluster, first, other)
    inter = session_has_inter_pod_terms(ssn)
    for kind, plugin, sig in ssn.placement_signatures():
        if plugin != name:
            continue
        assert sig is not None
        second = {f: first[f] if f in sig.effective(inter) else other[f] for f in FIELDS}
        ssn2, t1, t2 = _session(name, args, cluster, first, second)
        assert {f for f in sig.effective(session_has_inter_pod_terms(ssn2))} <= sig.effective(inter)
        mask = np.array([bool(mask_bits >> (i % 5) & 1) for i in range(len(ssn2.node_table))])
        assert _answers(ssn2, kind, name, t1, mask) == _answers(ssn2, kind, name, t2, mask), (kind, sig)

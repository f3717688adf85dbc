"""The pod index gives the inter-pod answers of the straightforward pod-by-pod walk, exactly.

On generated clusters (nodes with and without zone / rack labels, pods of two namespaces with
random labels, some leaving) a pending task with random preferred and required pod
(anti-)affinity terms and topology spread constraints is scored and filtered (whole table and
preempt's one-row re-check) through the plugins' session indexes and through `pod_reference`,
after each of a random sequence of placements, evictions and discards (the indexes follow the
session's events).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.session import open_session
from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.node_static import NodeStatic
from scheduler_core.plugins.util.pod_spread import pod_affinity_scores, spread_failures, spread_scores
from tests.scheduler_core.builders import conf, job, node, snapshot, task
from tests.scheduler_core.plugins.util import pod_reference as ref

HOST = "kubernetes.io/hostname"
KEYS = ("zone", "rack", HOST, "missing")
NAMESPACES = ("ns", "other")
LABELS = {"app": ("web", "db", "x"), "tier": ("1", "2")}

label_sets = st.dictionaries(st.sampled_from(sorted(LABELS)), st.sampled_from(("web", "db", "x", "1", "2")),
                             max_size=2)


@st.composite
def selectors(draw) -> dict | None:
    kind = draw(st.sampled_from(("none", "empty", "labels", "exprs")))
    if kind == "none":
        return None
    if kind == "empty":
        return {}
    if kind == "labels":
        return {"matchLabels": draw(label_sets)}
    exprs = []
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(sorted(LABELS)))
        op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
        e: dict = {"key": key, "operator": op}
        if op in ("In", "NotIn"):
            e["values"] = draw(st.lists(st.sampled_from(LABELS[key]), min_size=1, max_size=2))
        exprs.append(e)
    return {"matchExpressions": exprs}


@st.composite
def pod_terms(draw) -> dict:
    t: dict = {"labelSelector": draw(selectors()), "topologyKey": draw(st.sampled_from(KEYS))}
    if draw(st.booleans()):
        t["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2))
    return t


@st.composite
def affinities(draw) -> dict:
    out: dict = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        preferred = [{"weight": draw(st.integers(0, 100)), "podAffinityTerm": draw(pod_terms())}
                     for _ in range(draw(st.integers(0, 3)))]
        required = [draw(pod_terms()) for _ in range(draw(st.integers(0, 1)))]
        out[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": preferred,
                     "requiredDuringSchedulingIgnoredDuringExecution": required}
    return out


@st.composite
def spreads(draw) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        c = {"maxSkew": draw(st.integers(1, 3)), "topologyKey": draw(st.sampled_from(KEYS[:3])),
             "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
             "labelSelector": draw(selectors())}
        if draw(st.booleans()):
            c["minDomains"] = draw(st.integers(1, 4))
        if draw(st.booleans()):
            c["matchLabelKeys"] = ["app"]
        out.append(c)
    return out


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 7))
    nodes = []
    for i in range(n):
        labels = {HOST: f"n{i}"}
        zone = draw(st.sampled_from(("a", "b", "c", None)))
        if zone:
            labels["zone"] = zone
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(("r0", "r1")))
        nodes.append(node(f"n{i}", cpu="64", memory="256Gi", labels=labels))
    jobs = []
    for ns in NAMESPACES:
        pods = [task(f"{ns}-p{k}", cpu="100m", status=draw(st.sampled_from(("Running", "Releasing"))),
                     node=f"n{draw(st.integers(0, n - 1))}", labels=draw(label_sets),
                     affinity=draw(st.none() | affinities()))  # required anti-affinity: holders
                for k in range(draw(st.integers(0, 8)))]
        jobs.append(job(f"old-{ns}", tasks=pods, namespace=ns, phase="Running"))
    probe = task("probe", labels=draw(label_sets), affinity=draw(affinities()),
                 topology_spread_constraints=draw(spreads()))
    movers = [task(f"m{k}", cpu="100m", labels=draw(label_sets), affinity=draw(st.none() | affinities()))
              for k in range(draw(st.integers(0, 3)))]
    jobs.append(job("new", tasks=[probe, *movers], namespace=draw(st.sampled_from(NAMESPACES))))
    ops = draw(st.lists(st.tuples(st.sampled_from(("place", "evict", "discard", "commit")),
                                  st.integers(0, 20), st.integers(0, n - 1)), max_size=6))
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return nodes, jobs, ops, mask


def _check(ssn, probe, mask) -> None:
    table = ssn.node_table
    pred, order = ssn.plugins["predicates"], ssn.plugins["nodeorder"]
    static = NodeStatic(table)
    for m in (table.all_rows(), np.asarray(mask, dtype=bool)):
        assert pod_affinity_scores(probe, table, static, m, order.pods).tolist() == \
            ref.pod_affinity_scores(probe, table, static, m).tolist()
        assert spread_scores(probe, table, static, m, order.pods).tolist() == \
            ref.spread_scores(probe, table, static, m).tolist()
    got = [(r, m.tolist()) for r, m in spread_failures(probe, table, static, pred.pods)]
    assert got == [(r, m.tolist()) for r, m in ref.spread_failures(probe, table, static)]
    for only in (False, True):
        masks = pred.pod_affinity_failures(probe, table, pred._static_of(table), only)
        got = [(r, m.tolist()) for r, m in masks]
        want = ref.pod_affinity_failures(probe, table, static, pred.anti_holders, only)
        assert got == [(r, m.tolist()) for r, m in want]
    for row in range(len(table)):  # preempt / reclaim's one-row re-check
        assert pred.row_failure(probe, row, table) == ref.row_failure(pred, probe, row, table, static)


@settings(max_examples=100)
@given(clusters())
def test_indexed_inter_pod_answers_equal_the_pod_by_pod_walk(case):
    nodes, jobs, ops, mask = case
    ssn = open_session(snapshot(nodes=nodes, jobs=jobs), conf("allocate", [["predicates", "nodeorder"]]))
    probe = ssn.jobs[jobs[-1].uid].tasks[jobs[-1].uid.split("/")[0] + "/probe"]
    _check(ssn, probe, mask)
    stmt = ssn.statement()
    for op, k, row in ops:
        tasks = [t for j in ssn.jobs.values() for t in j.tasks.values() if t is not probe]
        t = tasks[k % len(tasks)] if tasks else None
        if op == "place" and t is not None and t.status is TaskStatus.PENDING:
            stmt.allocate(t, ssn.node_table.names[row])
        elif op == "evict" and t is not None and t.status is TaskStatus.RUNNING:
            stmt.evict(t, "test")
        elif op == "discard":
            stmt.discard()
            stmt = ssn.statement()
        elif op == "commit":
            stmt.commit()
            stmt = ssn.statement()
        _check(ssn, probe, mask)


def test_row_recheck_sees_existing_anti_affinity_until_the_holder_leaves():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}
    nodes = [node(name, labels={"zone": name[0]}) for name in ("a1", "a2", "b1")]
    holders = [task(f"h{i}", status="Running", node="a1", affinity=anti, cpu="100m") for i in range(2)]
    probe = task("probe", labels={"app": "web"})
    jobs = [job("old", tasks=holders, phase="Running"), job("new", tasks=[probe])]
    ssn = open_session(snapshot(nodes=nodes, jobs=jobs), conf("allocate", [["predicates", "nodeorder"]]))
    pred, table = ssn.plugins["predicates"], ssn.node_table
    probe = ssn.jobs["ns/new"].tasks["ns/probe"]
    existing = "node(s) didn't satisfy existing pods anti-affinity rules"
    assert [pred.row_failure(probe, r, table) for r in range(3)] == [existing, existing, None]
    stmt = ssn.statement()
    stmt.evict(ssn.jobs["ns/old"].tasks["ns/h0"], "test")
    assert [pred.row_failure(probe, r, table) for r in range(3)] == [existing, existing, None]
    stmt.evict(ssn.jobs["ns/old"].tasks["ns/h1"], "test")
    assert [pred.row_failure(probe, r, table) for r in range(3)] == [None, None, None]
    stmt.discard()
    assert [pred.row_failure(probe, r, table) for r in range(3)] == [existing, existing, None]

"""Placer: classes of identical tasks follow the plugins' signatures; its face answers as allocate needs."""

from __future__ import annotations

import pytest

from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.session import open_session
from scheduler_core.framework.signature import Signature, class_key_fn, signed_fields
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task
from tests.scheduler_core.listed import listed

DEFAULT_TIERS = [["priority", "gang"], ["drf", "predicates", "proportion", "nodeorder", "binpack"]]
SIGNED = {"resreq", "node_selector", "tolerations", "affinity", "topology_spread_constraints"}
REPEL = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}


@pytest.fixture
def unsigned_plugin():
    """A test-only predicate registered without a signature (it reads nothing, but says nothing)."""
    class Unsigned(Plugin):
        name = "_t_unsigned"

        def on_session_open(self, ssn):
            ssn.add_predicate_fn(self.name, lambda t, table: [])

    with listed(Unsigned):
        yield "_t_unsigned"


def _placer(jobs, tiers, nodes=None):
    snap = snapshot(nodes=nodes or [node("n1"), node("n2")], jobs=jobs)
    return Placer(open_session(snap, conf("allocate", tiers))), snap


def _web(name, namespace="ns", priority=0, affinity=None, created=0.0):
    t = task(f"{name}-0", labels={"app": "web", "job": name}, priority=priority, affinity=affinity)
    return job(name, tasks=[t], namespace=namespace, created=created)


def test_default_plugins_sign_everything_but_labels_priority_and_namespace():
    placer, snap = _placer([_web("a", priority=5), _web("b", namespace="other")], DEFAULT_TIERS)
    assert placer.fields == SIGNED
    a, b = (next(iter(snap.jobs[uid].tasks.values())) for uid in ("ns/a", "other/b"))
    assert placer.class_key(a) == placer.class_key(b) == a.sched_key[:5]


def test_inter_pod_terms_make_labels_and_namespace_matter():
    placer, snap = _placer([_web("a"), _web("b", affinity=REPEL)], DEFAULT_TIERS)
    assert placer.fields == SIGNED | {"labels", "namespace"}
    a = next(iter(snap.jobs["ns/a"].tasks.values()))
    assert placer.class_key(a) == (a.sched_key[:6], "ns")


def test_a_plugin_without_signature_keeps_the_whole_sched_key(unsigned_plugin):
    placer, snap = _placer([_web("a", priority=5)], [["gang"], ["predicates", unsigned_plugin]])
    assert placer.fields is None
    a = next(iter(snap.jobs["ns/a"].tasks.values()))
    assert placer.class_key(a) is a.sched_key


@pytest.mark.parametrize(("signatures", "inter_pod", "fields"), [
    ([], False, {"resreq"}),
    ([Signature(("affinity",)), Signature(("resreq", "labels"))], False, {"resreq", "affinity", "labels"}),
    ([Signature(("affinity",), inter_pod=("namespace",))], False, {"resreq", "affinity"}),
    ([Signature(("affinity",), inter_pod=("namespace",))], True, {"resreq", "affinity", "namespace"}),
    ([Signature(("resreq",)), None], True, None),
])
def test_signed_fields_union(signatures, inter_pod, fields):
    asked = []
    got = signed_fields(signatures, lambda: asked.append(1) or inter_pod)
    assert got == fields
    # The session scan runs only when a conditional field is not signed anyway.
    conditional = any(s is not None and s.inter_pod for s in signatures) and None not in signatures
    assert len(asked) == (1 if conditional else 0)


def test_class_key_of_every_field_is_the_sched_key():
    t = task("t", labels={"a": "b"}, priority=3)
    every = frozenset({"resreq", "node_selector", "tolerations", "affinity", "topology_spread_constraints",
                       "labels", "priority"})
    assert class_key_fn(every)(t) is t.sched_key
    assert class_key_fn(frozenset({"resreq"}))(t) == t.sched_key[0]
    assert class_key_fn(every | {"namespace"})(t) == (t.sched_key, "")


def test_namespaces_do_not_share_a_class_under_inter_pod_terms():
    # n1 holds an ns1 pod repelling app=web pods of ns1 (its namespace) in zone a; n2 has room for
    # one task. a (ns1) can only go to n2; b (ns2, same spec and labels) is not repelled: n1.
    holder = task("h", cpu="1", status="Running", node="n1", affinity=REPEL)
    nodes = [node("n1", cpu="4", labels={"zone": "a"}), node("n2", cpu="1", labels={"zone": "b"})]
    jobs = [job("hold", tasks=[holder], namespace="ns1"),
            _web("a", namespace="ns1", created=1.0), _web("b", namespace="ns2", created=2.0)]
    for j in jobs[1:]:
        next(iter(j.tasks.values())).labels = {"app": "web"}
    result = run(snapshot(nodes=nodes, jobs=jobs), conf("allocate", [["gang"], ["predicates"]]))
    assert result.binds == {"ns1/a-0": "n2", "ns2/b-0": "n1"}


def test_best_placed_released_and_the_failure_memo():
    # Two 1-cpu slots (n1 sorts first on ties); the third task of the class fits nowhere.
    jobs = [job("j", tasks=[task(f"t{i}", cpu="2", memory="1Gi") for i in range(3)])]
    placer, snap = _placer(jobs, [["gang"], ["predicates"]], nodes=[node("n1", cpu="2"), node("n2", cpu="2")])
    ssn = placer.ssn
    t0, t1, t2 = (snap.jobs["ns/j"].tasks[f"ns/t{i}"] for i in range(3))
    stmt = ssn.statement()
    assert placer.best(t0) == (0, False)
    stmt.allocate(t0, "n1")
    placer.placed(t0, 0)
    assert placer.best(t1) == (1, False)
    stmt.allocate(t1, "n2")
    placer.placed(t1, 1)
    assert placer.best(t2) is None
    assert placer.fit_errors(t2) is placer.fit_errors(t0)
    assert placer.fit_errors(t2).reasons == {"Insufficient cpu": 2}
    placer.released(op.task for op in stmt.operations)
    stmt.discard()
    assert placer.best(t2) == (0, False)


def test_forget_recomputes_after_an_unlogged_change():
    jobs = [job("j", tasks=[task("t0", cpu="2"), task("t1", cpu="2")])]
    placer, snap = _placer(jobs, [["gang"], ["predicates"]], nodes=[node("n1", cpu="2")])
    t0, t1 = (snap.jobs["ns/j"].tasks[f"ns/t{i}"] for i in range(2))
    assert placer.best(t0) == (0, False)
    placer.ssn.allocate(t0, "n1")  # not told: the cached class still sees n1 free
    assert placer.best(t1) == (0, False)
    placer.forget()
    assert placer.best(t1) is None

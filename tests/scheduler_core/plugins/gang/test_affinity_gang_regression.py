"""Issue 33 finding 1, scaled down: a waiting gang with many preferred pod (anti-)affinity terms.

The probe's gang (400 tasks, 50 + 50 preferred terms of 20 values) made every cycle take 16-20 s
because scoring each task matched every term against every pod of every node. Here: 10 nodes
holding 40 pods of 8 jobs, a gang of 45 (then 70) tasks with 10 + 10 terms of 5 values that can
never be complete (so every cycle evaluates it and discards it). The work counter is the number
of label-selector matches the inter-pod code makes: before the pod index it grew with tasks x
nodes x terms x pods (about 20,000 here); now each term is matched once per pod class, whatever
the number of tasks.
"""

from __future__ import annotations

import pytest

import scheduler_core.plugins.util.node_static as node_static
import scheduler_core.plugins.util.pod_index as pod_index
import scheduler_core.plugins.util.pod_spread as pod_spread
from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, queue, replicas, snapshot, task

HOST = "kubernetes.io/hostname"
TERMS, VALUES = 10, 5


def _affinity() -> dict:
    def term(i: int) -> dict:
        values = [f"j{(i + v) % 8}" for v in range(VALUES)]
        expr = {"key": "job", "operator": "In", "values": values}
        return {"weight": 1 + i, "podAffinityTerm": {"labelSelector": {"matchExpressions": [expr]},
                                                     "topologyKey": HOST if i % 2 else "zone"}}
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return {"podAffinity": {pref: [term(i) for i in range(TERMS)]},
            "podAntiAffinity": {pref: [term(i + TERMS) for i in range(TERMS)]}}


def _cluster(gang: int):
    nodes = [node(f"n{i}", cpu="8", memory="64Gi", labels={HOST: f"n{i}", "zone": "ab"[i % 2]})
             for i in range(10)]
    jobs = [job(f"j{k}", queue="q", phase="Running",
                tasks=[task(f"j{k}-{i}", cpu="1", status="Running", node=f"n{(k + i) % 10}",
                            labels={"job": f"j{k}"}) for i in range(5)]) for k in range(8)]
    # 10 nodes x 8 cpu, 40 held: the gang's queue lets it have 40, never `gang`.
    jobs.append(job("gang", queue="g", min_available=gang,
                    tasks=replicas("g", gang, cpu="1", labels={"job": "gang"}, affinity=_affinity())))
    return snapshot(nodes=nodes, queues=[queue("q"), queue("g")], jobs=jobs)


def _matches(monkeypatch: pytest.MonkeyPatch, gang: int):
    calls = [0]
    real = node_static.selector_matches

    def counted(selector, labels):
        calls[0] += 1
        return real(selector, labels)

    for module in (pod_spread, pod_index):
        monkeypatch.setattr(module, "selector_matches", counted)
    result = run_session(_cluster(gang), work_budget=0)
    return calls[0], result


def test_scoring_a_waiting_affinity_gang_matches_each_term_once_per_pod_class(monkeypatch):
    few, result = _matches(monkeypatch, 45)
    many, result70 = _matches(monkeypatch, 70)
    classes = 8 + 1  # the running jobs' label sets, then the gang's own once it is placed
    assert few <= 2 * TERMS * (classes + 1)
    assert many == few  # more tasks, no more matching
    assert few > 0  # the gang was evaluated (40 of its tasks placed, then discarded)
    for res, size in ((result, 45), (result70, 70)):
        assert res.binds == {}
        assert res.reasons["ns/gang"].code is ReasonCode.QueueOverDeserved
        assert f"need {size}, 40 left" in res.reasons["ns/gang"].message

"""blame.Blame: a class state's fit errors, its kept per-row blame updated for the rows changed,
equal those of a full predicate over every row, after any placements and releases."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.allocate.blame import fit_errors
from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.framework.session import open_session
from scheduler_core.framework.statement import Statement
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot, task

TIERS = [["priority", "gang"], ["predicates", "proportion", "nodeorder"]]
REPEL = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "probe"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def _world(pods: list[int], cpus: list[int]):  # noqa: ANN202
    nodes = [node(f"n{i}", cpu=str(c), pods=p, unschedulable=(i == 0 and len(pods) > 3),
                  labels={"kubernetes.io/hostname": f"n{i}"})
             for i, (p, c) in enumerate(zip(pods, cpus, strict=False))]
    fillers = job("fill", tasks=replicas("f", 12, cpu="1"), phase="Inqueue")
    probe = job("probe", tasks=[task("p", cpu="3", labels={"app": "probe"})], phase="Inqueue")
    # On n1 a running pod that repels the probe: n1 fails it on a predicate after the pod count,
    # so n1's blame moves once fillers take its last pod slot (a row the class rejects changes).
    repel = job("repel", phase="Running", tasks=[task("r", cpu=None, memory=None, status="Running", node="n1",
                                                      affinity=REPEL)])
    ssn = open_session(snapshot(nodes=nodes, jobs=[fillers, probe, repel]), conf("allocate", TIERS))
    fill = sorted(ssn.jobs["ns/fill"].tasks.values(), key=lambda t: t.uid)
    return ssn, fill, ssn.jobs["ns/probe"].tasks["ns/p"]


@settings(max_examples=80, deadline=None)
@given(pods=st.lists(st.integers(2, 4), min_size=10, max_size=14),
       cpus=st.lists(st.integers(2, 6), min_size=14, max_size=14),
       ops=st.lists(st.tuples(st.sampled_from(["place", "place", "place", "discard", "check"]),
                              st.integers(0, 11), st.sampled_from([0, 1, 1, 2, 5, 9])),
                    min_size=1, max_size=20))
def test_kept_blame_gives_the_full_predicates_fit_errors(pods, cpus, ops):
    ssn, fillers, probe = _world(pods, cpus)
    placer = Placer(ssn)
    placer.best(probe)  # the probe's class state, built now and kept through the changes below
    state = placer._states[placer.class_key(probe)]
    stmt = Statement(ssn)
    names = ssn.node_table.names
    for op, i, row in [*ops, ("check", 0, 0)]:
        row %= len(names)
        if op == "place":
            t = fillers[i]
            if t.node_name is None and ssn.node_table.idle_pods[row] >= 1:
                stmt.allocate(t, names[row])
                placer.placed(t, row)
        elif op == "discard":
            placer.released(stmt.placed_tasks())
            stmt.discard()
            stmt = Statement(ssn)
        if op != "check":
            continue  # changes pile up: the class catches up with several rows at once
        state.catch_up(placer._log)
        got = state.errors()
        pred = ssn.predicate(probe)
        want = fit_errors(ssn, probe, pred.ok_mask, pred.counts())
        assert got == want and list(got.reasons) == list(want.reasons)
        assert state.ok.tolist() == pred.ok_mask.tolist()

"""allocate: binds, gang all-or-nothing, pipelining onto releasing resources, queue refusals."""

from __future__ import annotations

import pytest

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.framework.session import open_session
from scheduler_core.model import JobPhase, TaskStatus
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import conf, job, node, queue, replicas, run, snapshot, task

S = TaskStatus
GANG = [["priority", "gang"], ["predicates"]]


def _codes(ssn, job_uid: str) -> list[str]:
    return [getattr(r["code"], "value", r["code"]) for r in ssn.reason_records.get(job_uid, [])]


def _running(name: str, node_name: str, cpu: str = "1", status: TaskStatus = S.RUNNING, **kw):
    return task(name, cpu=cpu, status=status, node=node_name, **kw)


CASES = [
    pytest.param(  # no scores: ties go to the node whose name sorts first, until it is full
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [job("j1", tasks=replicas("t", 3, cpu="1"))],
        {"ns/t-0": "n1", "ns/t-1": "n1", "ns/t-2": "n2"}, {}, {"ns/j1": "Inqueue"},
        id="fill-first-node"),
    pytest.param(  # pod count limit: a full node is skipped although cpu is left
        [node("n1", cpu="8", pods=2), node("n2", cpu="8", pods=2)],
        [job("j1", tasks=replicas("t", 5, cpu="1"))],
        {"ns/t-0": "n1", "ns/t-1": "n1", "ns/t-2": "n2", "ns/t-3": "n2"}, {}, {"ns/j1": "Inqueue"},
        id="pods-limit"),
    pytest.param(  # gang of 3 but only 2 fit: everything tried is discarded
        [node("n1", cpu="2")],
        [job("j1", min_available=3, tasks=replicas("t", 3, cpu="1"))],
        {}, {}, {"ns/j1": "Inqueue"},
        id="gang-discard"),
    pytest.param(  # the first gang cannot fit, the second one still gets the node
        [node("n1", cpu="2")],
        [job("big", min_available=3, tasks=replicas("b", 3, cpu="1"), created=1.0),
         job("small", min_available=2, tasks=replicas("s", 2, cpu="1"), created=2.0)],
        {"ns/s-0": "n1", "ns/s-1": "n1"}, {}, {"ns/big": "Inqueue", "ns/small": "Inqueue"},
        id="gang-does-not-block-next-job"),
    pytest.param(  # no idle anywhere, n2 releases 2 cpu: the task is pipelined there, not bound
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [job("old", tasks=[_running("o-0", "n1", cpu="2"),
                           _running("o-1", "n2", cpu="2", status=S.RELEASING)]),
         job("new", tasks=[task("p-0", cpu="2")])],
        {}, {"ns/p-0": "n2"}, {"ns/new": "Inqueue"},
        id="pipeline-onto-releasing"),
    pytest.param(  # idle fit wins over a future-idle fit even on a later node
        [node("n1", cpu="2"), node("n2", cpu="2")],
        [job("old", tasks=[_running("o-0", "n1", cpu="2", status=S.RELEASING)]),
         job("new", tasks=[task("p-0", cpu="2")])],
        {"ns/p-0": "n2"}, {}, {"ns/new": "Inqueue"},
        id="idle-before-future-idle"),
    pytest.param(  # best-effort tasks are left to backfill
        [node("n1")],
        [job("j1", tasks=[task("be", cpu=None, memory=None), task("t", cpu="1")])],
        {"ns/t": "n1"}, {}, {"ns/j1": "Inqueue"},
        id="skip-best-effort"),
    pytest.param(  # task order: the higher-priority task goes first even though its name sorts later
        [node("n1", cpu="2")],
        [job("j1", tasks=[task("a", cpu="1", priority=1), task("b", cpu="2", priority=10)])],
        {"ns/b": "n1"}, {}, {"ns/j1": "Inqueue"},
        id="task-priority-order"),
    pytest.param(  # node selector: only the labelled node passes the predicates
        [node("n1"), node("n2", labels={"zone": "b"})],
        [job("j1", tasks=[task("t", node_selector={"zone": "b"})])],
        {"ns/t": "n2"}, {}, {"ns/j1": "Inqueue"},
        id="predicates-filter"),
]


# Jobs bound in this session stay Inqueue: the PodGroup turns Running in the next cycle.
@pytest.mark.parametrize(("nodes", "jobs", "binds", "pipelined", "phases"), CASES)
def test_allocate(nodes, jobs, binds, pipelined, phases):
    result = run(snapshot(nodes=nodes, jobs=jobs), conf("allocate", GANG))
    assert result.binds == binds
    assert result.pipelined == pipelined
    assert result.evictions == []
    assert {k: v for k, v in result.job_phase.items() if k in phases} == phases


@pytest.mark.parametrize(("actions", "phase", "binds"), [
    ("allocate", "Inqueue", {"ns/t": "n1"}),          # no enqueue: allocate admits Pending jobs itself
    ("backfill, allocate", "Inqueue", {"ns/t": "n1"}),
])
def test_pending_job_admitted_without_enqueue(actions, phase, binds):
    snap = snapshot(nodes=[node("n1")], jobs=[job("j1", phase="Pending", tasks=[task("t")])])
    result = run(snap, conf(actions, GANG))
    assert result.binds == binds
    assert result.job_phase["ns/j1"] == phase


def test_pending_job_waits_for_enqueue_when_configured():
    # enqueue is configured but rejects nothing here; a job it did not admit is not allocated.
    snap = snapshot(nodes=[node("n1")], jobs=[job("j1", phase="Pending", tasks=[task("t")])])
    ssn = open_session(snap, conf("enqueue, allocate", GANG))
    AllocateAction().execute(ssn)
    assert snap.jobs["ns/j1"].phase is JobPhase.PENDING
    assert ssn.placed == {}


def test_closed_queue_records_reason_and_places_nothing():
    snap = snapshot(nodes=[node("n1")], queues=[queue("q1", state="Closed")],
                    jobs=[job("j1", tasks=[task("t")])])
    ssn = open_session(snap, conf("allocate", GANG))
    AllocateAction().execute(ssn)
    assert ssn.placed == {}
    assert _codes(ssn, "ns/j1") == ["QueueClosed"]


def test_pipelined_job_waits_for_preemption():
    snap = snapshot(nodes=[node("n1", cpu="2")],
                    jobs=[job("old", tasks=[_running("o-0", "n1", cpu="2", status=S.RELEASING)]),
                          job("new", tasks=[task("p-0", cpu="2")])])
    ssn = open_session(snap, conf("allocate", GANG))
    AllocateAction().execute(ssn)
    assert snap.jobs["ns/new"].tasks["ns/p-0"].status is S.PIPELINED
    assert _codes(ssn, "ns/new") == ["WaitingForPreemption"]


def test_pipelined_job_final_reason_is_waiting_not_gang():
    # The gang (min 1) is met by the pipelined task: the job waits, it is not unschedulable.
    snap = snapshot(nodes=[node("n1", cpu="2")],
                    jobs=[job("old", tasks=[_running("o-0", "n1", cpu="2", status=S.RELEASING)]),
                          job("new", tasks=[task("p-0", cpu="2")])])
    result = run_session(snap, conf("allocate", GANG))
    assert result.pipelined == {"ns/p-0": "n1"}
    assert result.reasons["ns/new"].code.value == "WaitingForPreemption"


def test_fit_errors_recorded_once_per_class():
    nodes = [node("n1", cpu="2"), node("n2", cpu="8", unschedulable=True),
             node("n3", cpu="8", labels={"zone": "x"})]
    jobs = [job("j1", tasks=replicas("t", 3, cpu="4", node_selector={"zone": "y"}))]
    snap = snapshot(nodes=nodes, jobs=jobs)
    ssn = open_session(snap, conf("allocate", GANG))
    AllocateAction().execute(ssn)
    errors = ssn.fit_errors["ns/j1"]
    assert list(errors) == ["ns/t-0"]  # identical tasks are not retried
    fe = errors["ns/t-0"]
    assert fe.total_nodes == 3
    assert sum(fe.reasons.values()) == 3
    assert ssn.placed == {}


def test_fit_errors_count_insufficient_resources():
    snap = snapshot(nodes=[node("n1", cpu="2"), node("n2", cpu="2", memory="64Gi")],
                    jobs=[job("j1", tasks=[task("t", cpu="3", memory="1Gi"),
                                           task("u", cpu="1", memory="32Gi")])])
    ssn = open_session(snap, conf("allocate", GANG))
    AllocateAction().execute(ssn)
    assert ssn.fit_errors["ns/j1"]["ns/t"].reasons == {"Insufficient cpu": 2}
    assert [t.uid for t in ssn.placed.values()] == ["ns/u"]
    assert snap.jobs["ns/j1"].tasks["ns/u"].node_name == "n2"


def test_ready_job_yields_to_next_job_of_queue():
    # min_available=1: after its first task the job is ready, goes back to the queue and the
    # job order (creation time) picks it again; all of it still lands, in task order.
    snap = snapshot(nodes=[node("n1", cpu="3")],
                    jobs=[job("a", tasks=replicas("a", 2, cpu="1"), created=1.0),
                          job("b", tasks=replicas("b", 2, cpu="1"), created=2.0)])
    result = run(snap, conf("allocate", GANG))
    assert result.binds == {"ns/a-0": "n1", "ns/a-1": "n1", "ns/b-0": "n1"}


def test_allocate_is_deterministic():
    def build():
        nodes = [node(f"n{i}", cpu="3") for i in range(5)]
        jobs = [job(f"j{i}", min_available=2, tasks=replicas(f"j{i}t", 3, cpu=str(1 + i % 2)),
                    created=float(i))
                for i in range(6)]
        return snapshot(nodes=nodes, jobs=jobs)

    first = run(build(), conf("allocate", GANG))
    second = run(build(), conf("allocate", GANG))
    assert first.binds == second.binds
    assert first.job_phase == second.job_phase
    assert len(first.binds) == 11


SCORED = [["priority", "gang"], ["predicates", "proportion", "nodeorder", "binpack"]]


@pytest.mark.parametrize(("tiers", "binds"), [
    # leastrequested + balancedresource spread the tasks, binpack (weight 1) packs them
    ([["gang"], ["predicates", "nodeorder"]], {"ns/t-0": "n1", "ns/t-1": "n2", "ns/t-2": "n3"}),
    ([["gang"], ["predicates", "binpack"]], {"ns/t-0": "n1", "ns/t-1": "n1", "ns/t-2": "n1"}),
])
def test_scores_pick_nodes(tiers, binds):
    snap = snapshot(nodes=[node("n1"), node("n2"), node("n3")], jobs=[job("j1", tasks=replicas("t", 3))])
    assert run(snap, conf("allocate", tiers)).binds == binds


def test_incremental_class_state_matches_a_fresh_one():
    # The per-row updates after each placement must equal a recomputation over all rows.
    from scheduler_core.actions.allocate.change_log import ChangeLog
    from scheduler_core.actions.allocate.placement import ClassState

    nodes = [node(f"n{i}", cpu=str(2 + i % 3), pods=3 + i % 2) for i in range(8)]
    snap = snapshot(nodes=nodes, jobs=[job("j1", tasks=replicas("t", 12, cpu="1"))])
    ssn = open_session(snap, conf("allocate", SCORED))
    tasks = sorted(snap.jobs["ns/j1"].tasks.values(), key=lambda t: t.uid)
    log = ChangeLog()
    state = ClassState(ssn, tasks[0], True, log)
    for t in tasks:
        state.catch_up(log)
        choice = state.best()
        fresh = ClassState(ssn, t, True)
        assert choice == fresh.best()
        if choice is None:
            break
        ssn.allocate(t, ssn.node_table.names[choice[0]])
        log.add(choice[0])
    state.catch_up(log)
    state.verify(0)
    fresh = ClassState(ssn, tasks[0], True)
    assert (state.ok == fresh.ok).all()
    assert (state.best_idle == fresh.best_idle).all()


@pytest.fixture
def anti_affinity_plugin():
    """A test-only dynamic predicate: a zone holding an app=web task rejects tasks that repel it."""
    import numpy as np

    from scheduler_core.framework.interface import Plugin
    from tests.scheduler_core.listed import listed

    class Repel(Plugin):
        name = "_t_repel"

        def on_session_open(self, ssn):
            def predicate(t, table):
                if not (t.affinity or {}).get("podAntiAffinity"):
                    return []
                zones = {n.labels["zone"] for n in table.nodes
                         if any(x.labels.get("app") == "web" for x in n.tasks.values())}
                taken = np.array([n.labels["zone"] in zones for n in table.nodes])
                return [("node(s) didn't match pod anti-affinity rules", taken)]

            ssn.add_predicate_fn(self.name, predicate, static=False)

    with listed(Repel):
        yield "_t_repel"


def test_pod_anti_affinity_refreshes_every_row(anti_affinity_plugin):
    # One web task per zone. Placing w0 on n1 also closes n2 (same zone a): the class is
    # recomputed over every row, not just the chosen one, so w1 goes to n3 (zone b).
    repel = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}
    tasks = [task(f"w{i}", labels={"app": "web"}, affinity=repel) for i in range(3)]
    nodes = [node(name, labels={"zone": zone}) for name, zone in (("n1", "a"), ("n2", "a"), ("n3", "b"))]
    snap = snapshot(nodes=nodes, jobs=[job("web", tasks=tasks)])
    result = run(snap, conf("allocate", [["gang"], [anti_affinity_plugin]]))
    assert result.binds == {"ns/w0": "n1", "ns/w1": "n3"}

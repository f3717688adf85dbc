"""allocate's quick round: a job whose pending tasks are all of one kind, a kind the failure memo
already says fits nowhere, ends its round without ordering its tasks or opening a statement, with
exactly the full round's decisions and records (fit errors, queue refusals, waiting reasons,
recorded node scores). Its head task (the first in task order) is kept per job revision.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.allocate import allocate as allocate_module
from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.allocate.heads import PendingHeads
from scheduler_core.framework.task_fallback import first_task, sort_tasks
from scheduler_core.model import TaskStatus
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.actions.allocate.test_allocate_runs import CONFIGS, build_world, result_json, worlds
from tests.scheduler_core.builders import conf, job, node, queue, replicas, snapshot, task

TIERS = [["priority", "gang"], ["drf", "predicates", "proportion", "nodeorder"]]


@pytest.fixture
def quick_rounds(monkeypatch):
    """The jobs whose round the quick path took, in order."""
    taken: list[str] = []
    original = AllocateAction._quick_round

    def spy(self, ssn, queue, job, head):
        done = original(self, ssn, queue, job, head)
        if done:
            taken.append(job.name)
        return done

    monkeypatch.setattr(AllocateAction, "_quick_round", spy)
    return taken


def full_rounds(build, cfg, **kw: Any) -> dict:
    """The same session with the quick path off."""
    AllocateAction.quick = False
    try:
        return result_json(run_session(build(), cfg, **kw))
    finally:
        AllocateAction.quick = True


def big_gangs() -> Any:
    # Two 4-cpu nodes with 1 cpu left each; three gangs of 2-cpu tasks (they would fit an empty
    # node, not these), then a gang of 1-cpu tasks that fits.
    held = [task(f"held-{k}", cpu="3", status="Running", node=f"n{k + 1}") for k in range(2)]
    return snapshot(nodes=[node("n1"), node("n2")], queues=[queue("q1")],
                    jobs=[job("held", queue="q1", tasks=held, phase="Running")]
                    + [job(f"big{k}", queue="q1", min_available=2, created=float(k),
                           tasks=replicas(f"big{k}", 3, cpu="2")) for k in range(3)]
                    + [job("ok", queue="q1", min_available=2, created=9.0, tasks=replicas("ok", 2, cpu="1"))])


def test_gangs_of_a_failed_kind_take_the_quick_round(quick_rounds):
    cfg = conf("enqueue, allocate", TIERS)
    result = run_session(big_gangs(), cfg)
    # The first gang asks the nodes; the two after it are answered by the memo.
    assert quick_rounds == ["big1", "big2"]
    assert result.binds == {"ns/ok-0": "n1", "ns/ok-1": "n2"}
    for k in range(3):
        reason = result.reasons[f"ns/big{k}"]
        assert (reason.code.value, reason.message) == (
            "GangUnschedulable", "2/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, "
                                 "2 minAvailable; 0/2 nodes are unavailable: 2 Insufficient cpu.")
    assert result_json(result) == full_rounds(big_gangs, cfg)


def test_the_quick_round_records_the_same_node_scores(quick_rounds):
    cfg = conf("enqueue, allocate", TIERS)
    result = run_session(big_gangs(), cfg, record_scores=True)
    assert quick_rounds == ["big1", "big2"]
    assert result_json(result) == full_rounds(big_gangs, cfg, record_scores=True)


def test_a_job_of_two_kinds_takes_the_full_round(quick_rounds):
    def build():
        mixed = [task(f"m-{k}", cpu="8") for k in range(2)] + [task("m-2", cpu="1")]
        return snapshot(nodes=[node("n1")], queues=[queue("q1")],
                        jobs=[job("big", queue="q1", min_available=2, tasks=replicas("big", 2, cpu="8")),
                              job("m", queue="q1", min_available=1, created=1.0, tasks=mixed)])

    cfg = conf("enqueue, allocate", TIERS)
    result = run_session(build(), cfg)
    assert quick_rounds == []
    assert result.binds == {"ns/m-2": "n1"}  # its other kind still goes
    assert result_json(result) == full_rounds(build, cfg)


def test_a_queue_refusal_is_recorded_by_the_quick_round(quick_rounds):
    # n1 has 2 of its 4 cpu left. big0 (queue q0) asks the node first for a 4-cpu task and fails;
    # big1's identical task is then refused by q1's capability (5 cpu, 2 in use) before any node
    # is asked: the quick round records the queue's reason, as the full round would.
    def build():
        held = [task("held-0", cpu="2", status="Running", node="n1")]
        return snapshot(nodes=[node("n1")], queues=[queue("q0"), queue("q1", capability={"cpu": "5"})],
                        jobs=[job("held", queue="q1", tasks=held, phase="Running"),
                              job("big0", queue="q0", min_available=1, tasks=replicas("big0", 1, cpu="4")),
                              job("big1", queue="q1", min_available=1, created=1.0,
                                  tasks=replicas("big1", 1, cpu="4"))])

    cfg = conf("allocate", [["priority", "gang"], ["drf", "predicates", "capacity"]])
    result = run_session(build(), cfg)
    assert quick_rounds == ["big1"]
    assert result.reasons["ns/big1"].code.value == "QueueOverCapability"
    assert result_json(result) == full_rounds(build, cfg)


def test_a_pipelined_job_still_waits_after_the_quick_round(quick_rounds, monkeypatch):
    # p's first task is already pipelined on n1 (from an earlier cycle); its other task is of
    # big0's kind, which only n1 may take (node selector) and n1 is full: the round places
    # nothing and p keeps waiting for n1. (n2 keeps the queue's room open.)
    def build():
        pool = {"node_selector": {"pool": "a"}}
        held = [task("held-0", cpu="3", status="Running", node="n1")]
        p_tasks = [task("p-0", cpu="2", status="Pipelined", node="n1", **pool), task("p-1", cpu="2", **pool)]
        return snapshot(nodes=[node("n1", labels={"pool": "a"}), node("n2", cpu="8")], queues=[queue("q1")],
                        jobs=[job("held", queue="q1", tasks=held, phase="Running"),
                              job("big0", queue="q1", min_available=1,
                                  tasks=replicas("big0", 1, cpu="2", **pool)),
                              job("p", queue="q1", min_available=1, created=1.0, tasks=p_tasks)])

    waiting: list[str] = []
    original = allocate_module.record_waiting
    monkeypatch.setattr(allocate_module, "record_waiting",
                        lambda ssn, action, job: (waiting.append(job.name), original(ssn, action, job)))
    cfg = conf("allocate", TIERS)
    result = run_session(build(), cfg)
    assert quick_rounds == ["p"]
    assert waiting == ["p"]  # the ledger's WaitingForPreemption, as the full round records it
    assert result.reasons["ns/p"].code.value == "NodeFit"  # the fit errors are more specific
    assert result_json(result) == full_rounds(build, cfg)
    assert waiting == ["p", "p"]


def test_heads_follow_the_job_revision():
    snap = big_gangs()
    heads, big = PendingHeads(), snap.jobs["ns/big0"]
    assert heads.head(big).name == "big0-0"
    big.update_task_status(big.tasks["ns/big0-0"], TaskStatus.RUNNING)  # (bookkeeping only)
    assert heads.head(big).name == "big0-1"
    other = task("ns/big0-x", cpu="1")
    other.job_uid = big.uid
    big.add_task(other)
    assert heads.head(big) is None  # two kinds now


names = st.lists(st.tuples(st.sampled_from(["w", "w-1", "w-2", "w-10", "w-x", "a-3", "w-01"]),
                           st.sampled_from([0.0, 1.0, 2.0])), min_size=1, max_size=8, unique=True)


@settings(profiled(settings(max_examples=200)))
@given(specs=names)
def test_first_task_is_the_sorts_first(specs):
    tasks = [task(name, created=created) for name, created in specs]
    ordered = list(tasks)
    sort_tasks(ordered)
    assert first_task(tasks) is ordered[0]


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(profiled(settings(max_examples=60)))
@given(world=worlds, scores=st.booleans())
def test_quick_rounds_decide_as_full_rounds(name, world, scores):
    cfg = conf("enqueue, allocate, preempt, reclaim, backfill", CONFIGS[name])
    hierarchy = name == "hierarchy"
    quick = result_json(run_session(build_world(world, hierarchy), cfg, record_scores=scores))
    assert quick == full_rounds(lambda: build_world(world, hierarchy), cfg, record_scores=scores)

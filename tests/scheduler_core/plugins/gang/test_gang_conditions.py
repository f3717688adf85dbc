"""gang at session close: PodGroup conditions (Unschedulable / Scheduled), the releasing
exception, and how a stored condition list takes a new condition."""

from __future__ import annotations

import pytest

from scheduler_core.plugins.gang.gang import skip_unschedulable_for_releasing
from scheduler_core.result import PodGroupCondition, merge_conditions
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task
from tests.scheduler_core.plugins.gang.test_gang import _job


@pytest.mark.parametrize(("statuses", "min_available", "skip"), [
    (["Running", "Releasing"], 2, True),
    (["Bound", "Failed", "Succeeded", "Releasing"], 4, True),    # Bound, Failed, Succeeded count
    (["Running", "Releasing"], 3, False),                         # short of min_available
    (["Running", "Releasing", "Pending"], 2, False),              # a Pending task
    (["Running", "Releasing", "Pipelined"], 2, False),            # a Pipelined task
    (["Binding", "Allocated", "Releasing"], 2, False),            # Binding, Allocated do not count
    (["Running", "Running"], 2, False),                           # nothing Releasing
])
def test_the_releasing_exception(statuses, min_available, skip):
    assert skip_unschedulable_for_releasing(_job(statuses, min_available)) is skip


def test_a_releasing_task_without_a_node_does_not_count():
    j = _job(["Running", "Releasing"], 2)
    next(t for t in j.tasks.values() if t.status.value == "Releasing").node_name = None
    assert not skip_unschedulable_for_releasing(j)


def test_every_job_gets_its_condition_at_close():
    snap = snapshot(nodes=[node("n1", cpu="2")], jobs=[
        job("ok", tasks=[task("a"), task("b")], min_available=2, phase="Inqueue", created=1.0),
        job("big", tasks=[task("c", cpu="2"), task("d", cpu="2")], min_available=2, phase="Inqueue",
            created=2.0)], now=1767225600.0)
    result = run(snap, conf("allocate", [["gang"], ["predicates"]]))
    assert {uid: c.to_json() for uid, c in result.conditions.items()} == {
        "ns/ok": {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled",
                  "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        "ns/big": {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                   "message": "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, "
                              "2 minAvailable",
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}}
    assert run(snapshot(nodes=[node("n1")], jobs=[job("x", tasks=[task("e")])]),
               conf("allocate", [["predicates"]])).conditions == {}  # no gang plugin, no conditions


def test_a_stored_condition_keeps_its_time_until_it_says_something_else():
    def unschedulable(message: str, at: float) -> PodGroupCondition:
        return PodGroupCondition("Unschedulable", "NotEnoughResources", message, at)

    first = unschedulable("1/2 tasks", 100.0)
    stored = merge_conditions([], first)
    assert stored == [first.to_json()]
    assert merge_conditions(stored, unschedulable("1/2 tasks", 200.0)) == stored  # same words: time stays
    reworded = merge_conditions(stored, unschedulable("2/2 tasks", 300.0))
    assert reworded == [{**first.to_json(), "message": "2/2 tasks",
                         "lastTransitionTime": "1970-01-01T00:05:00Z"}]
    ready = PodGroupCondition("Scheduled", "tasks in gang are ready to be scheduled", "", 400.0)
    both = merge_conditions(reworded, ready)
    assert [c["type"] for c in both] == ["Unschedulable", "Scheduled"]  # one entry per type, as Volcano

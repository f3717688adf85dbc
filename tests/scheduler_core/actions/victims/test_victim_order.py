"""Victim order between jobs of one queue and the task order fallback (Volcano's CompareTask)."""

from __future__ import annotations

import pytest

from scheduler_core.framework.task_fallback import compare_task, name_index, sort_tasks
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

PRIORITY_ONLY = [["priority"], ["proportion"]]


def _running(name: str, created: float, cpu: str = "2"):
    return task(name, cpu=cpu, status="Running", node="n1", created=created)


@pytest.mark.parametrize(("name", "index"), [
    ("w-9", 9), ("job-worker-10", 10), ("w-007", 7), ("w-+3", 3), ("p1", None), ("w-", None),
    ("w-1x", None), ("w-1_0", None), ("w- 1", None), (f"w-{2**63}", None), ("w-١", None),
])
def test_name_index_is_the_numeric_last_part(name, index):
    assert name_index(name) == index


def test_compare_task_index_first_then_created_then_uid():
    w9, w10 = task("w-9", created=5.0), task("w-10", created=1.0)
    assert compare_task(w9, w10) < 0  # the index decides before the creation time
    a, b = task("a", created=1.0), task("b", created=1.0)
    assert compare_task(a, b) < 0 and compare_task(b, a) > 0
    same = [task("x-1", created=2.0), task("y-1", created=1.0)]
    assert compare_task(*same) > 0  # equal indexes: creation time


def test_sort_tasks_by_index_and_mixed_names():
    tasks = [task(f"w-{i}") for i in (10, 9, 1, 100)]
    sort_tasks(tasks)
    assert [t.name for t in tasks] == ["w-1", "w-9", "w-10", "w-100"]
    sort_tasks(tasks, reverse=True)
    assert [t.name for t in tasks] == ["w-100", "w-10", "w-9", "w-1"]
    mixed = [task("w-2", created=3.0), task("solo", created=1.0), task("w-1", created=2.0)]
    sort_tasks(mixed)
    assert [t.name for t in mixed] == ["solo", "w-1", "w-2"]


def test_allocate_takes_w_9_before_w_10():
    tasks = [task(f"w-{i}", cpu="3") for i in (10, 9)]
    snap = snapshot(nodes=[node("n1", cpu="4")], jobs=[job("j", tasks=tasks)])
    assert run(snap, conf("allocate", PRIORITY_ONLY)).binds == {"ns/w-9": "n1"}


def test_victims_between_tied_jobs_follow_the_reverse_task_order():
    # Jobs a and b tie on priority: no creation-time fallback between them (b is newer), so
    # their tasks come in reverse task order: a-0 was created last, it goes first.
    a = job("a", priority=1, created=1.0, phase="Running", tasks=[_running("a-0", created=5.0)])
    b = job("b", priority=1, created=2.0, phase="Running", tasks=[_running("b-0", created=3.0)])
    high = job("high", priority=100, created=3.0, tasks=[task("h-0", cpu="2")])
    snap = snapshot(nodes=[node("n1", cpu="4")], jobs=[a, b, high])
    result = run(snap, conf("preempt", PRIORITY_ONLY))
    assert result.evictions == ["ns/a-0"] and result.pipelined == {"ns/h-0": "n1"}


def test_victims_between_jobs_follow_the_plugins_job_order_reversed():
    # b has the lower priority: its task goes first whatever the task order says.
    a = job("a", priority=5, created=1.0, phase="Running", tasks=[_running("a-0", created=5.0)])
    b = job("b", priority=1, created=2.0, phase="Running", tasks=[_running("b-0", created=3.0)])
    high = job("high", priority=100, created=3.0, tasks=[task("h-0", cpu="2")])
    snap = snapshot(nodes=[node("n1", cpu="4")], jobs=[a, b, high])
    result = run(snap, conf("preempt", PRIORITY_ONLY))
    assert result.evictions == ["ns/b-0"]


def test_victims_inside_one_job_highest_index_first():
    low = job("low", priority=1, created=1.0, phase="Running",
              tasks=[_running(f"l-{i}", created=1.0, cpu="1") for i in (9, 10, 8, 7)])
    high = job("high", priority=100, created=2.0, tasks=[task("h-0", cpu="1")])
    snap = snapshot(nodes=[node("n1", cpu="4")], jobs=[low, high])
    result = run(snap, conf("preempt", PRIORITY_ONLY))
    assert result.evictions == ["ns/l-10"]

"""JobInfo's incremental counters equal a recount after any sequence of status changes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.model import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    TERMINAL_STATUSES,
    VALID_STATUSES,
    TaskStatus,
)
from tests.scheduler_core.builders import job, node, task

STATUSES = list(TaskStatus)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(STATUSES)), max_size=40),
       st.lists(st.booleans(), min_size=5, max_size=5))
def test_ready_and_best_effort_counters_match_a_recount(moves, best_effort):
    tasks = [task(f"t{i}", cpu=None if be else str(i + 1), memory=None if be else "1Gi")
             for i, be in enumerate(best_effort)]
    j = job("j")
    for t in tasks:  # the builder leaves indexing to ClusterSnapshot.build; index here
        t.job_uid = j.uid
        j.add_task(t)
    for i, status in moves:
        j.update_task_status(tasks[i], status)
        assert j.ready_task_num() == sum(t.status in READY_STATUSES for t in tasks)
        assert j.valid_task_num() == sum(t.status in VALID_STATUSES for t in tasks)
        assert j.pending_best_effort_task_num() == sum(
            t.status is TaskStatus.PENDING and t.best_effort for t in tasks)
        assert j.allocated.milli_cpu == sum(
            t.resreq.milli_cpu for t in tasks if t.status in ALLOCATED_STATUSES)
        assert j.total_request.milli_cpu == sum(
            t.resreq.milli_cpu for t in tasks if t.status not in TERMINAL_STATUSES)
        assert {s: set(b) for s, b in j.task_status_index.items()} == {
            s: {t.uid for t in tasks if t.status is s} for s in {t.status for t in tasks}}
    j.delete_task(tasks[0])
    assert j.ready_task_num() == sum(t.status in READY_STATUSES for t in tasks[1:])


def test_ready_statuses_are_volcanos():
    assert {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING,
                              TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED} == READY_STATUSES


def test_build_reindexes_jobs_whose_tasks_were_already_indexed():
    from scheduler_core.model import ClusterSnapshot

    tasks = [task("be", cpu=None, memory=None), task("run", status="Running", node="n1"), task("p")]
    j = job("j")
    for t in tasks:
        t.job_uid = j.uid
        j.add_task(t)  # indexed once here, then again by build
    snap = ClusterSnapshot.build(nodes=[node("n1")], queues=[], jobs=[j])
    rebuilt = snap.jobs[j.uid]
    counts = (rebuilt.ready_task_num(), rebuilt.pending_best_effort_task_num(), rebuilt.valid_task_num())
    assert counts == (1, 1, 3)


def test_valid_statuses_are_volcanos():
    assert {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING,
            TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING} == VALID_STATUSES

"""check_invariants(): a healthy cluster has none; each violating state gives its exact message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schedweb.core import services
from schedweb.core.models import Job, Node, Task
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.invariants import (
    SubmissionCounts,
    check_cycles,
    check_invariants,
    check_nodes,
    check_tasks,
    count_submissions,
)
from schedweb.scheduling.models import CycleRun
from tests.schedweb.scheduling.conftest import make_cluster, submit

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def place(name: str, status: str, node: str | None) -> None:
    """Force task `name` into `status` on `node` (bypassing the services, as a bug would)."""
    Task.objects.filter(name=name).update(status=status, node=Node.objects.filter(name=node).first())


def test_healthy_cluster_after_cycles_and_agent_has_no_violation():
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=3, cpu="2")
    submit("b", tasks=2, cpu="2")  # a gang of two; one more task fits: stays Pending
    run = cycle_run(now=T0)
    assert run.binds == 3
    assert check_invariants() == []
    agent_step(now=T0 + timedelta(seconds=1))
    services.job_cancel(job=Job.objects.get(name="b"))
    assert check_invariants() == []


@pytest.mark.parametrize(("placements", "expected"), [
    # Three 2-core tasks on a 4-core node: over cpu whether they run or release.
    ([("a-0", "Running"), ("a-1", "Running"), ("a-2", "Binding")],
     ["node n0: occupying tasks request cpu 6000 > allocatable 4000",
      "node n0: non-releasing and pipelined tasks request cpu 6000 > allocatable 4000"]),
    ([("a-0", "Releasing"), ("a-1", "Releasing"), ("a-2", "Releasing")],
     ["node n0: occupying tasks request cpu 6000 > allocatable 4000"]),
    # A pipelined task waits for the room a releasing one frees: allowed (Volcano's future idle).
    ([("a-0", "Running"), ("a-1", "Releasing"), ("a-2", "Pipelined")], []),
    ([("a-0", "Running"), ("a-1", "Running"), ("a-2", "Pipelined")],
     ["node n0: non-releasing and pipelined tasks request cpu 6000 > allocatable 4000"]),
    ([("a-0", "Running"), ("a-1", "Bound")], []),
])
def test_node_capacity(placements, expected):
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=3, cpu="2")
    for name, status in placements:
        place(name, status, "n0")
    assert check_nodes() == expected


def test_node_pod_limit_and_undeclared_scalar():
    services.queue_create(name="q")
    services.node_create(name="small", allocatable={"cpu": "8", "memory": "8Gi", "pods": 2})
    services.job_submit(namespace="ns", name="g", queue="q", tasks=[
        {"name": f"g-{i}", "request": {"cpu": "1", "nvidia.com/gpu": "1"}} for i in range(3)])
    for i in range(3):
        place(f"g-{i}", "Running", "small")
    assert check_nodes() == [
        "node small: occupying tasks request nvidia.com/gpu 3000 > allocatable 0",
        "node small: occupying tasks request pods 3 > allocatable 2",
        "node small: non-releasing and pipelined tasks request nvidia.com/gpu 3000 > allocatable 0",
        "node small: non-releasing and pipelined tasks request pods 3 > allocatable 2",
    ]


def test_task_states():
    make_cluster(nodes=1, cpu="8")
    submit("a", tasks=4)
    submit("done", tasks=2)
    submit("gone", tasks=2)
    place("a-0", "Running", None)      # holding without a node
    place("a-1", "Pending", "n0")      # waiting on a node
    Task.objects.filter(name="a-2").update(status="Lost")
    Job.objects.filter(name="done").update(phase="Completed")
    place("done-0", "Succeeded", "n0")
    place("done-1", "Running", "n0")   # alive in a completed job
    Job.objects.filter(name="gone").update(phase="Cancelled")
    place("gone-0", "Releasing", "n0")  # a cancelled job's task may still release its node
    Job.objects.filter(name="a").update(phase="Paused")
    assert check_tasks() == [
        "job ns/a: unknown phase 'Paused'",
        "task ns/a-0: Running without a node",
        "task ns/a-1: Pending but on node n0",
        "task ns/a-2: unknown status 'Lost'",
        "task ns/done-1: Running in Completed job ns/done",
        "task ns/gone-1: Pending in Cancelled job ns/gone",
    ]


def test_cycle_rows_left_half_written():
    CycleRun.objects.create(started=T0, duration_seconds=0.0)
    CycleRun.objects.create(started=T0 + timedelta(seconds=1), skipped=True, binds=2)
    CycleRun.objects.create(started=T0 + timedelta(seconds=2), errors="OperationalError: gone", evictions=1)
    ids = list(CycleRun.objects.order_by("id").values_list("id", flat=True))
    assert check_cycles() == [
        f"cycle {ids[0]}: never finished its write phase (no duration recorded)",
        f"cycle {ids[1]}: skipped but records 2 binds, 0 pipelined, 0 evictions",
        f"cycle {ids[2]}: failed but records 0 binds, 0 pipelined, 1 evictions",
    ]


def test_more_binds_stamped_than_the_cycle_recorded():
    make_cluster(nodes=1, cpu="8")
    submit("a", tasks=3)
    run = cycle_run(now=T0)
    assert (run.binds, check_cycles()) == (3, [])
    CycleRun.objects.filter(pk=run.pk).update(binds=2)
    assert check_cycles() == [f"cycle {run.pk}: 3 tasks Binding at its start but it records 2"]


def test_decisions_whose_cycle_row_is_missing():
    make_cluster(nodes=1, cpu="8")
    submit("a", tasks=1)
    cycle_run(now=T0)
    submit("b", tasks=2)
    lost = cycle_run(now=T0 + timedelta(seconds=2))
    assert lost.binds == 2
    lost.delete()  # as if the cycle's own row had not been written with its decisions
    assert check_cycles() == [
        "task ns/b-0: Binding since 2026-01-01T00:00:02+00:00, when no cycle is recorded (partial cycle)",
        "task ns/b-1: Binding since 2026-01-01T00:00:02+00:00, when no cycle is recorded (partial cycle)",
    ]
    # Deployments whose agents set Binding themselves turn the orphan check off.
    assert check_cycles(cycle_statuses=()) == []


def test_count_submissions():
    make_cluster(nodes=1)
    submit("a", tasks=3)
    submit("b", tasks=1)
    services.job_submit(namespace="other", name="c", queue="q", tasks=[{"name": "c-0"}], idempotency_key="k1")
    assert count_submissions() == SubmissionCounts(jobs=3, tasks=5, keyed_jobs=1)
    assert count_submissions(namespace="ns") == SubmissionCounts(jobs=2, tasks=4, keyed_jobs=0)
    assert count_submissions(namespace="ns", name_prefix="b") == SubmissionCounts(1, 1, 0)

"""Task names are unique per job (issue 19): two jobs of one namespace may both have a task `w0`,
and the scheduler keys tasks "namespace/job/task" in the full load, the kept snapshot and the
writes alike."""

from __future__ import annotations

import pytest
from django.utils import timezone

from schedweb.core.job_services import job_cancel, job_submit
from schedweb.core.models import Job, Task
from schedweb.scheduling import incremental
from schedweb.scheduling.adapter import load_state, task_key
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run

from .conftest import make_cluster, requires_postgres
from .test_incremental import assert_incremental_equals_full


def twin(name: str, cpu: str = "1") -> Job:
    """A job whose two tasks are named as its twin's: w0 and w1."""
    return job_submit(namespace="ns", name=name, queue="q", min_member=2,
                      tasks=[{"name": f"w{i}", "request": {"cpu": cpu, "memory": "1Gi"}} for i in range(2)])


def test_the_key_names_namespace_job_and_task():
    assert task_key("ns", "a", "w0") == "ns/a/w0"


def test_the_load_keys_twin_tasks_apart(db):
    make_cluster(nodes=1)
    twin("a"), twin("b")
    state = load_state(timezone.now())
    assert sorted(state.tasks) == ["ns/a/w0", "ns/a/w1", "ns/b/w0", "ns/b/w1"]
    assert sorted(state.snapshot.jobs["ns/b"].tasks) == ["ns/b/w0", "ns/b/w1"]
    ids = {Task.objects.get(job__name=j, name=t).pk: f"ns/{j}/{t}" for j in "ab" for t in ("w0", "w1")}
    assert {row[0]: uid for uid, row in state.tasks.items()} == ids


def test_a_cycle_places_and_writes_twin_tasks_each_on_its_own_row(db):
    make_cluster(nodes=1, cpu="4")
    twin("a"), twin("b")
    run = cycle_run()
    assert (run.errors, run.binds) == ("", 4)
    assert sorted(Task.objects.values_list("job__name", "name", "status", "node__name")) == [
        ("a", "w0", "Binding", "n0"), ("a", "w1", "Binding", "n0"),
        ("b", "w0", "Binding", "n0"), ("b", "w1", "Binding", "n0")]


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_the_kept_snapshot_equals_a_full_load_with_twin_tasks():
    make_cluster(nodes=1, cpu="4")
    twin("a")
    assert not cycle_run().errors
    twin("b", cpu="2")  # b's w0/w1 wait for room: a holds half the node
    agent_step()
    assert not cycle_run().errors
    before = incremental.full_loads
    assert_incremental_equals_full()
    job_cancel(job=Job.objects.get(name="a"))
    assert not cycle_run().errors
    assert_incremental_equals_full()
    assert incremental.full_loads == before

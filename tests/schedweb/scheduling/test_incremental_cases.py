"""The incremental snapshot, case by case: what the session changed in memory only, late
commits, and every reason for a full load (PostgreSQL, committed transactions)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from scheduler_core.model import TaskStatus as CoreStatus
from scheduler_core.result import SessionResult
from schedweb.core import services
from schedweb.core.job_services import job_cancel, task_set_status
from schedweb.core.models import Job, Queue, Task
from schedweb.scheduling import incremental
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import active_conf, cycle_run
from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster, requires_postgres, statuses, submit
from .snapshot_compare import differences, picture
from .test_incremental import assert_incremental_equals_full

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def raw() -> psycopg.Connection:
    """A second connection to the test database (another writer, outside Django's)."""
    s = connection.settings_dict
    conn = psycopg.connect(dbname=s["NAME"], user=s["USER"], password=s["PASSWORD"] or None,
                           host=s["HOST"] or None, port=s["PORT"] or None)
    yield conn
    conn.close()


def _cycle() -> CycleRun:
    run = cycle_run()
    assert not run.errors and not run.skipped, run.errors
    return run


def test_a_cancelled_job_releasing_its_tasks_keeps_its_loaded_phase():
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=2)
    _cycle()
    agent_step()  # Binding -> Running
    job_cancel(job=Job.objects.get(name="a"))  # Running -> Releasing, phase Cancelled
    _cycle()  # the session computes Pending for it: never written (Cancelled is final)
    before = incremental.full_loads
    assert_incremental_equals_full()
    assert incremental.full_loads == before


def test_a_set_aside_job_gets_its_waiting_tasks_back():
    make_cluster(nodes=1, cpu="4")
    submit("ok", tasks=1)
    job = Job.objects.create(namespace="ns", name="bad", queue=Queue.objects.get(name="q"), min_member=1)
    Task.objects.create(job=job, name="bad-0", request={"cpu": 500},
                        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}})
    first = _cycle()
    assert first.job_errors == 1
    assert_incremental_equals_full()  # bad-0 left the job in memory (the screen); it is back
    again = _cycle()
    assert again.job_errors == 1


def test_a_task_allocated_without_a_bind_is_pending_again():
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=2)
    with transaction.atomic():
        state = incremental.load(timezone.now(), active_conf()[0])
        snap = state.snapshot
        task = snap.jobs["ns/a"].tasks["ns/a/a-0"]
        task.node_name = "n0"  # what Session.allocate does, left unbound (the job was not ready)
        snap.jobs["ns/a"].update_task_status(task, CoreStatus.ALLOCATED)
        snap.nodes["n0"].add_task(task)
        incremental.settle(state, SessionResult())
    assert_incremental_equals_full()


def test_a_late_commit_of_an_older_transaction_is_not_missed(raw):
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=1)
    submit("b", tasks=1)
    _cycle()
    ids = dict(Task.objects.values_list("name", "id"))
    # An older transaction takes its id and writes, then a younger one commits, then a cycle
    # runs: it sees only the younger. The older commits afterwards: the next load must see it.
    raw.execute("UPDATE core_task SET status = 'Running', updated = now() WHERE id = %s", [ids["a-0"]])
    task_set_status(task=Task.objects.get(name="b-0"), status="Running")
    _cycle()
    assert statuses("a")["a-0"][0] == "Binding"  # not committed yet: the cycle did not see it
    raw.commit()
    assert_incremental_equals_full()
    assert statuses("a")["a-0"][0] == "Running"


@pytest.mark.parametrize("change", ["other_process", "truncate", "config", "periodic", "priority_class",
                                    "queue_rename", "failed_cycle"])
def test_full_load_when_the_kept_snapshot_cannot_follow(change, settings):
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=1)
    _cycle()
    _cycle()
    before = incremental.full_loads
    if change == "other_process":
        CycleRun.objects.create(started=timezone.now())
    elif change == "truncate":
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE core_namespacequota")
    elif change == "config":
        services.scheduler_config_activate(yaml="actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                                                "  - name: gang\n")
    elif change == "periodic":
        settings.SCHEDULER_FULL_RELOAD_EVERY = 1
    elif change == "priority_class":
        services.priority_class_create(name="high", value=100)
    elif change == "queue_rename":
        services.queue_update(queue=Queue.objects.get(name="q"), name="q2")
    elif change == "failed_cycle":
        incremental.forget()  # what cycle_run does when a cycle fails
    _cycle()
    assert incremental.full_loads == before + 1
    assert_incremental_equals_full()


def test_a_fresh_snapshot_on_request_is_a_full_load():
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=1)
    _cycle()
    now = timezone.now()
    with transaction.atomic():
        kept = incremental.load(now, active_conf()[0])
        assert not kept.full
        fresh = incremental.load(now, active_conf()[0], fresh=True)
        assert fresh.full and fresh.snapshot is not kept.snapshot
        assert differences(picture(fresh), picture(load_state(now))) == []


def test_unchanged_cluster_reads_no_rows():
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=1)
    _cycle()
    agent_step()
    _cycle()
    for _ in range(2):  # the first load reads the cycle's own writes back, the second nothing
        with transaction.atomic():
            incremental.load(timezone.now(), active_conf()[0])
    assert incremental.stats() == {"nodes": 0, "jobs": 0, "tasks": 0, "queries": 0}



def test_a_changed_task_is_screened_again_an_unchanged_one_not():
    """The screen (framework.isolation) skips tasks it passed before (`TaskInfo._screened`): a
    changed row comes back as a new TaskInfo, so only what changed is looked at again."""
    make_cluster(nodes=1, cpu="4")
    for name in ("a", "b"):
        submit(name, tasks=1, cpu="8")  # never placed: both stay Pending
    _cycle()
    _cycle()
    with transaction.atomic():
        jobs = incremental.load(timezone.now(), active_conf()[0]).snapshot.jobs
        assert [jobs[f"ns/{n}"].tasks[f"ns/{n}/{n}-0"]._screened for n in "ab"] == [True, True]
    Task.objects.filter(name="b-0").update(affinity={"nodeAffinity": "x"})  # a bulk write (no services)
    run = _cycle()
    assert run.job_errors == 1 and Job.objects.get(name="b").reason_code == "InvalidJob"
    assert Job.objects.get(name="a").reason_code != "InvalidJob"

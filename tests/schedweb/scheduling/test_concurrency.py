"""PostgreSQL: single leader, concurrent cycles, API changes made while a cycle runs, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections

from schedweb.core import services
from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, Node, Task
from schedweb.scheduling import cycle, writes
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun
from schedweb.scheduling.writes import LEADER_LOCK_KEY

from .conftest import allocatable_milli, make_cluster, node_load_milli, requires_postgres, statuses, submit
from .conftest import test_database_url as database_url

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[3]


def _in_thread(fn):
    """Run `fn` on another thread (its own connection, committed at once) and wait for it."""
    def run():
        try:
            fn()
        finally:
            connections.close_all()
    t = threading.Thread(target=run)
    t.start()
    t.join()


def test_cycle_skips_while_another_holds_the_leader_lock():
    make_cluster(nodes=1)
    submit("a")
    with psycopg.connect(database_url()) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [LEADER_LOCK_KEY])
        run = cycle_run()
        assert (run.skipped, run.binds) == (True, 0)
        assert statuses("a") == {"a-0": ("Pending", None)}
    assert cycle_run().binds == 1


def test_fifty_concurrent_cycles_never_overcommit_or_double_bind():
    make_cluster(nodes=3, cpu="4")
    for i in range(20):
        submit(f"j{i:02d}", tasks=1, cpu="1")

    def one(_: int) -> CycleRun:
        try:
            return cycle_run()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=50) as pool:
        runs = list(pool.map(one, range(50)))
    assert all(r.errors == "" for r in runs)
    assert sum(r.binds for r in runs) == 12  # 12 cores: every bind counted once
    assert Task.objects.filter(status="Binding").count() == 12
    load, alloc = node_load_milli(), allocatable_milli()
    assert all(load[n] <= alloc[n] for n in load)
    assert sum(load.values()) == 12000
    assert CycleRun.objects.count() == 50


def test_cancel_during_cycle_keeps_the_cancel(monkeypatch):
    make_cluster(nodes=1)
    job = submit("a", tasks=2)
    real = cycle.run_session_isolated

    def cancel_while_scheduling(build, conf, **options):
        result = real(build, conf, **options)
        _in_thread(lambda: job_cancel(job=Job.objects.get(pk=job.pk)))
        return result

    monkeypatch.setattr(cycle, "run_session_isolated", cancel_while_scheduling)
    run = cycle_run()
    assert (run.binds, run.conflicts) == (0, 3)  # 2 binds and the job's phase/reason update
    assert Job.objects.get(pk=job.pk).phase == "Cancelled"
    assert statuses("a") == {"a-0": ("Failed", None), "a-1": ("Failed", None)}


def test_job_deleted_during_cycle_is_not_bound(monkeypatch):
    make_cluster(nodes=1)
    job = submit("a", tasks=2)
    real = cycle.run_session_isolated

    def delete_while_scheduling(build, conf, **options):
        result = real(build, conf, **options)
        _in_thread(lambda: Job.objects.filter(pk=job.pk).delete())
        return result

    monkeypatch.setattr(cycle, "run_session_isolated", delete_while_scheduling)
    run = cycle_run()
    assert (run.binds, run.conflicts, run.errors) == (0, 3, "")
    assert not Task.objects.exists()


def test_node_removed_during_cycle_is_not_bound(monkeypatch):
    make_cluster(nodes=1)
    submit("a", tasks=1)
    real = cycle.run_session_isolated

    def delete_node_while_scheduling(build, conf, **options):
        result = real(build, conf, **options)
        _in_thread(lambda: services.node_delete(node=Node.objects.get(name="n0")))
        return result

    monkeypatch.setattr(cycle, "run_session_isolated", delete_node_while_scheduling)
    run = cycle_run()
    assert (run.binds, run.conflicts, run.errors) == (0, 1, "")
    assert statuses("a") == {"a-0": ("Pending", None)}
    assert not Node.objects.exists()


def test_cycle_killed_during_write_leaves_no_partial_decision():
    make_cluster(nodes=2)
    submit("a", tasks=3)
    env = {**os.environ, "DATABASE_URL": database_url(), "DEBUG": "1", "SIMULATED_AGENT": "0",
           cycle.WRITE_SLEEP_ENV: "60"}
    proc = subprocess.Popen([sys.executable, "manage.py", "run_scheduler", "--once"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The task UPDATE is done (uncommitted) once the subprocess waits in the write-phase sleep:
        # it then holds row locks on the tasks, visible in pg_locks as a granted tuple/xid lock.
        deadline = time.monotonic() + 30
        with connection.cursor() as cursor:
            while time.monotonic() < deadline:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                               "AND state = 'idle in transaction' AND query LIKE 'UPDATE %%core_task%%'")
                if cursor.fetchone()[0]:
                    break
                time.sleep(0.1)
            else:
                pytest.fail("the cycle never reached its write phase")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert set(statuses("a").values()) == {("Pending", None)}
    assert CycleRun.objects.count() == 0
    # The dead backend's transaction and lock are gone: the next cycle binds everything.
    deadline = time.monotonic() + 10
    while (run := cycle_run()).skipped and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run.binds == 3


def test_node_delete_racing_the_cycle_write_is_refused_cleanly(monkeypatch):
    # The cycle has bound a task to n0 (uncommitted, n0 held FOR KEY SHARE) when an admin deletes
    # n0. The delete must wait for the cycle and then see the task n0 now holds (a clear "drain it
    # first"), never fail on the foreign key after the cycle commits.
    make_cluster(nodes=1)
    submit("a", tasks=1)
    outcome: dict[str, BaseException | None] = {}
    real = writes.update_tasks

    def delete_node() -> None:
        try:
            services.node_delete(node=Node.objects.get(name="n0"))
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever it was
            outcome["error"] = exc
        finally:
            connections.close_all()

    deleter = threading.Thread(target=delete_node)

    def update_then_let_the_delete_start(changes, now):
        applied = real(changes, now)
        deleter.start()
        deleter.join(1.0)  # it waits for the cycle's locks: still alive when the cycle commits
        return applied

    monkeypatch.setattr(writes, "update_tasks", update_then_let_the_delete_start)
    run = cycle_run()
    deleter.join(30)
    assert (run.binds, run.errors) == (1, "")
    error = outcome["error"]
    assert isinstance(error, ValidationError), repr(error)
    assert "still holds 1 task(s); drain it first" in str(error)
    assert statuses("a") == {"a-0": ("Binding", "n0")}

"""Commit-time checks between two scheduler instances (schedweb.scheduling.commit_check; PostgreSQL).

A deterministic interleaving: shard a's cycle runs its session, then (before a writes) shard b
commits a whole cycle on another connection; a's commit check re-reads the rows and the job
that would overfill the node, or the queue, loses its placements and says why. Then two real
connections race cycles in soft mode on shared nodes, and no node or queue ends over its limit.
Both use full loads (the kept snapshot is one per process, not per thread).
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.utils import timezone

from schedweb.core import services
from schedweb.core.models import Job, Node, NodeShard, Task
from schedweb.scheduling import commit_check, incremental, invariants
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.cycle import cycle_run

from .conftest import SIMPLE_CONF, requires_postgres, statuses, submit

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _full_loads(monkeypatch):
    monkeypatch.setattr(incremental, "load", lambda now, version, fresh=False: load_state(now))


def submit_to(scheduler: str, name: str, **kwargs) -> Job:
    job = submit(name, **kwargs)
    Job.objects.filter(pk=job.pk).update(scheduler_name=scheduler)
    return job


def _in_thread(fn) -> None:
    """Run `fn` on another thread (its own database connection) and wait for it."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            fn()
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def _b_commits_first(monkeypatch) -> None:
    """Make shard a's next commit check run right after shard b's whole cycle commits."""
    real = commit_check.drop_conflicts
    done: list[bool] = []

    def interleaved(inst, state, result):
        if inst.shard == "a" and not done:
            done.append(True)
            _in_thread(lambda: cycle_run(shard="b"))
        return real(inst, state, result)

    monkeypatch.setattr(commit_check, "drop_conflicts", interleaved)


def test_the_later_commit_loses_a_node_race(monkeypatch):
    services.queue_create(name="q")
    services.node_create(name="n0", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="soft", nodes_desired=["n0"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="soft", nodes_desired=[])
    submit_to("sched-a", "ja", tasks=1, cpu="3")
    submit_to("sched-b", "jb", tasks=1, cpu="3")
    _b_commits_first(monkeypatch)
    run = cycle_run(shard="a")
    assert not run.errors and run.binds == 0 and run.conflicts == 1
    assert statuses("jb") == {"jb-0": ("Binding", "n0")}
    assert statuses("ja") == {"ja-0": ("Pending", None)}
    code, message, details = Job.objects.values_list("reason_code", "reason_message", "reason_details").get(
        name="ja")
    assert code == "NodeFit"
    assert message == ("lost a race with another scheduler: node n0 would be over its allocatable (cpu); "
                       "retried next cycle")
    assert details == {"commit_conflict": {"node": "n0", "resources": ["cpu"]}}
    assert invariants.check_nodes() == []
    # Next cycle: a sees b's task and waits for an ordinary reason.
    again = cycle_run(shard="a")
    assert again.binds == 0 and again.conflicts == 0
    assert "lost a race" not in Job.objects.get(name="ja").reason_message


def test_the_later_commit_loses_a_queue_race(monkeypatch):
    services.queue_create(name="q", capability={"cpu": "4"})
    for i in range(2):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="hard", nodes_desired=["n0"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="hard", nodes_desired=["n1"])
    submit_to("sched-a", "ja", tasks=1, cpu="3")
    submit_to("sched-b", "jb", tasks=1, cpu="3")
    _b_commits_first(monkeypatch)
    run = cycle_run(shard="a")
    assert run.binds == 0 and run.conflicts == 1
    assert statuses("jb") == {"jb-0": ("Binding", "n1")}
    job = Job.objects.get(name="ja")
    assert (job.reason_code, job.reason_message) == (
        "QueueOverCapability",
        "lost a race with another scheduler: queue q would be over its capability (cpu); retried next cycle")
    assert invariants.check_queues() == []


def test_no_check_without_shards(monkeypatch):
    services.queue_create(name="q")
    services.node_create(name="n0", allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    submit("j", tasks=1, cpu="1")
    seen: list[str] = []
    real = connection.cursor

    def spy():
        cursor = real()
        execute = cursor.execute
        cursor.execute = lambda sql, params=None: (seen.append(sql), execute(sql, params))[1]
        return cursor

    monkeypatch.setattr(connection, "cursor", spy)
    assert cycle_run().binds == 1
    assert any("pg_try_advisory_xact_lock(" in s for s in seen)  # the spy sees the cycle's SQL
    assert not [s for s in seen if "pg_advisory_xact_lock(" in s or "jsonb_each_text" in s]


def test_two_connections_racing_never_overfill(monkeypatch):
    services.queue_create(name="q", capability={"cpu": "10"})
    for i in range(3):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi", "pods": 3})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="soft", nodes_desired=["n0"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="soft", nodes_desired=["n1"])
    for i in range(6):
        submit_to("sched-a", f"a{i}", tasks=2, cpu="1")
        submit_to("sched-b", f"b{i}", tasks=2, cpu="1")
    barrier = threading.Barrier(2)

    def worker(shard: str) -> None:
        for _ in range(4):
            barrier.wait()  # both cycles start together: their sessions see the same free room
            run = cycle_run(shard=shard, now=timezone.now())
            assert not run.errors, run.errors

    threads = [threading.Thread(target=lambda s=s: _guarded(worker, s)) for s in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not _failures, _failures
    assert invariants.check_nodes() == []
    assert invariants.check_queues() == []
    placed = [n for n, (status, _) in statuses().items() if status == "Binding"]
    assert 0 < len(placed) <= 9  # 3 nodes x 3 pods; 10 cpu of capability


_failures: list[BaseException] = []


def _guarded(fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:
        _failures.append(exc)
    finally:
        connection.close()


def test_check_queues_reports_a_queue_over_its_capability_up_the_chain():
    services.queue_create(name="top", capability={"cpu": "2"})
    services.queue_create(name="leaf", parent="top")
    services.node_create(name="n0", allocatable={"cpu": "8", "memory": "8Gi", "pods": 110})
    job = submit("j", tasks=3, cpu="1", queue="leaf")
    assert invariants.check_queues() == []  # Pending tasks allocate nothing
    # As the cycle and the agent would leave them (no service places a task): set on the rows.
    Task.objects.filter(job=job).update(status="Running", node=Node.objects.get(name="n0"))
    assert invariants.check_queues() == ["queue top: allocated tasks request cpu 3000 > capability 2000"]

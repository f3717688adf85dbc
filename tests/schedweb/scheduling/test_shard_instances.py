"""Several scheduler instances, one per shard (schedweb.scheduling.shard_runtime; PostgreSQL).

Two shards alternate cycles in one process: each keeps its own incremental snapshot (no full
load because the other shard ran a cycle), which equals a fresh load after every cycle, the
other shard's committed writes included; each places only its own jobs (routing by scheduler
name) and only on its nodes (hard mode); each writes its nodes_in_use; a job of the other shard
keeps the reason that shard wrote.
"""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from schedweb.core.models import Job, NodeShard
from schedweb.scheduling import incremental, shard_runtime, writes
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.cycle import active_conf, cycle_run
from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster, requires_postgres, statuses, submit
from .snapshot_compare import differences, picture

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("fresh_shard_caches")]


def shards(mode: str = "hard") -> None:
    """Shard a (scheduler sched-a) owns n0, n1; shard b (sched-b) n2, n3."""
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode=mode, nodes_desired=["n0", "n1"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode=mode, nodes_desired=["n2", "n3"])


def submit_to(scheduler: str, name: str, **kwargs) -> Job:
    """A job naming `scheduler` (the services do not take the name yet: set on the row)."""
    job = submit(name, **kwargs)
    Job.objects.filter(pk=job.pk).update(scheduler_name=scheduler)
    return job


def assert_kept_equals_fresh(shard: str) -> None:
    """Shard `shard`'s kept snapshot, brought up to date, equals a full load of the same rows."""
    now = timezone.now()
    incremental.use_shard(shard)
    with transaction.atomic():
        kept = incremental.load(now, active_conf()[0])
        full = load_state(now)
        assert not kept.full, shard
        assert differences(picture(kept), picture(full)) == []


def test_two_shards_alternate_each_with_its_own_kept_snapshot():
    make_cluster(nodes=4, cpu="4")
    shards()
    for i in range(3):
        submit_to("sched-a", f"a{i}", tasks=2, cpu="1")
        submit_to("sched-b", f"b{i}", tasks=2, cpu="1")
    loads = incremental.full_loads
    for step in range(4):
        for shard in ("a", "b"):
            run = cycle_run(shard=shard)
            assert run.shard == shard and not run.errors and not run.skipped, run.errors
        if step < 2:  # more work arrives between rounds
            submit_to("sched-a", f"a-late{step}", tasks=1, cpu="1")
            submit_to("sched-b", f"b-late{step}", tasks=1, cpu="1")
        assert_kept_equals_fresh("a")
        assert_kept_equals_fresh("b")
    assert incremental.full_loads - loads == 2  # one per shard, at start
    placed = statuses()
    for name, (status, node) in placed.items():
        assert status == "Binding", name
        assert node in ({"n0", "n1"} if name.startswith("a") else {"n2", "n3"}), (name, node)
    assert NodeShard.objects.get(name="a").nodes_in_use == ["n0", "n1"]
    assert NodeShard.objects.get(name="b").nodes_in_use == ["n2", "n3"]
    assert set(CycleRun.objects.values_list("shard", flat=True)) == {"a", "b"}


def test_a_shard_leaves_the_other_shards_jobs_alone():
    make_cluster(nodes=4, cpu="4")
    shards()
    submit_to("sched-b", "big", tasks=1, cpu="8")  # never fits: b writes a reason
    submit_to("sched-a", "small", tasks=1, cpu="1")
    cycle_run(shard="b")
    reason = Job.objects.values_list("reason_code", "reason_message").get(name="big")
    assert reason[0]
    run = cycle_run(shard="a")
    assert run.binds == 1
    assert Job.objects.values_list("reason_code", "reason_message").get(name="big") == reason
    assert statuses("big") == {"big-0": ("Pending", None)}


def test_the_default_instance_takes_jobs_naming_no_shard():
    make_cluster(nodes=4, cpu="4")
    shards()
    submit_to("sched-a", "mine-a", tasks=1, cpu="1")
    submit("plain", tasks=1, cpu="1")  # volcano: no shard answers to it
    run = cycle_run()
    assert run.shard == "" and run.binds == 1
    assert statuses("plain")["plain-0"][0] == "Binding"
    assert statuses("mine-a") == {"mine-a-0": ("Pending", None)}


def test_nodes_another_shard_still_uses_are_not_in_the_shard():
    make_cluster(nodes=4, cpu="4")
    shards()
    NodeShard.objects.filter(name="b").update(nodes_in_use=["n1", "n2", "n3"])  # b still holds n1
    submit_to("sched-a", "two", tasks=2, cpu="3")  # one task per node: only n0 is a's
    run = cycle_run(shard="a")
    assert run.binds == 0  # gang of 2, one node
    assert NodeShard.objects.get(name="a").nodes_in_use == ["n0"]


def test_an_unknown_shard_is_a_recorded_error():
    make_cluster(nodes=1)
    shards()
    run = cycle_run(shard="zz")
    assert run.shard == "zz" and "no NodeShard named 'zz'" in run.errors


def test_leader_locks_per_shard():
    assert shard_runtime.lock_key("") == writes.LEADER_LOCK_KEY
    assert len({shard_runtime.lock_key(s) for s in ("", "a", "b")}) == 3
    assert 0 <= shard_runtime.lock_key("a") < 2 ** 63
    with transaction.atomic():
        assert writes.try_leader_lock(shard_runtime.lock_key("a"))
        with connection.cursor() as cursor:  # held by this transaction: visible in pg_locks
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                           "AND pid = pg_backend_pid()")
            assert cursor.fetchone()[0] == 1

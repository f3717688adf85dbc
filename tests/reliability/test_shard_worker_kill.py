"""Two scheduler instances on two shards in soft mode (both place on every node), submissions
flowing, and kill -9 of shard a's worker in the middle of its cycles: shard b keeps cycling,
no node ends over its allocatable and no queue over its capability (the commit checks), nothing
submitted is lost, and once a's worker is back every job completes."""

from __future__ import annotations

import random
import sys
import time

import pytest
from django.utils import timezone

from schedweb.core import services
from schedweb.core.models import Job, NodeShard
from schedweb.scheduling.invariants import check_invariants, count_submissions
from schedweb.scheduling.models import CycleRun
from tests.schedweb.scheduling.conftest import SIMPLE_CONF

from .conftest import needs_services, open_transactions, variants, wait_all_completed
from .harness import ROOT, subprocess_env, wait_for

pytestmark = needs_services
WRITE_SLEEP = "0.3"  # shard a's cycles wait this long inside their write transaction


def _cluster() -> None:
    """4 nodes of 4 cores, one queue capped at 12 cores; shards a (n0, n1) and b (n2, n3), soft."""
    services.queue_create(name="q", capability={"cpu": "12"})
    for i in range(4):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "32Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="soft", nodes_desired=["n0", "n1"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="soft", nodes_desired=["n2", "n3"])


def _submit(prefix: str, count: int) -> list[str]:
    """`count` jobs of two 1-core tasks, alternately for sched-a and sched-b (the services do not
    take a scheduler name yet: set on the row, as an import would)."""
    names = []
    for i in range(count):
        name = f"{prefix}-{i}"
        job = services.job_submit(namespace="rel", name=name, queue="q", min_member=2,
                                  tasks=[{"name": f"{name}-{t}", "request": {"cpu": "1", "memory": "256Mi"},
                                          "duration": 0.5} for t in range(2)])
        Job.objects.filter(pk=job.pk).update(scheduler_name="sched-a" if i % 2 == 0 else "sched-b")
        names.append(name)
    return names


def _shard_worker(procs, shard: str, name: str, **env: str):
    argv = [sys.executable, str(ROOT / "manage.py"), "run_scheduler", "--shard", shard, "--period", "0.3"]
    return procs.spawn(name, argv, subprocess_env(**env))


def _cycles(shard: str) -> int:
    return CycleRun.objects.filter(shard=shard, skipped=False, errors="").count()


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("kills", "jobs"), variants((1, 6), (5, 16)))
def test_one_shard_killed_the_other_goes_on(kills, jobs, procs, soak_report):
    _cluster()
    rng = random.Random(20261202)
    submitted: list[str] = []
    b = _shard_worker(procs, "b", "shard-b")
    for i in range(kills):
        submitted += _submit(f"s{i}", jobs)  # more than fits at once: both shards race for room
        ran = _cycles("a")
        a = _shard_worker(procs, "a", f"shard-a{i}", SCHEDWEB_CYCLE_WRITE_SLEEP=WRITE_SLEEP)
        assert wait_for(lambda r=ran: _cycles("a") > r, 60), a.tail()
        time.sleep(rng.uniform(0.1, 0.8))
        a.kill()  # SIGKILL: mid-cycle (most of a's cycle is its write-phase sleep)
        soak_report["faults_injected"] += 1
        assert wait_for(lambda: open_transactions() == 0, 15)
        before = _cycles("b")
        assert wait_for(lambda b0=before: _cycles("b") >= b0 + 3, 30), b.tail()  # b goes on
        assert check_invariants() == []
        soak_report["faults_survived"] += 1
    moment = timezone.now()
    _shard_worker(procs, "a", "shard-a-final")
    assert wait_for(lambda: CycleRun.objects.filter(shard="a", started__gt=moment, errors="",
                                                    skipped=False).exists(), 60)
    assert wait_all_completed("rel", timeout=120), procs.started[-1].tail()
    assert check_invariants() == []
    assert b.alive()
    counts = count_submissions(namespace="rel")
    soak_report.update(submitted=len(submitted), stored=counts.jobs, lost=len(submitted) - counts.jobs)
    assert (counts.jobs, counts.tasks) == (len(submitted), 2 * len(submitted))

"""kill -9 of the Celery worker (with its beat) at random points of its cycles, again and again:
after each kill no partial cycle, no overbooked node, no lost job; a new worker carries on."""

from __future__ import annotations

import random
import time

import pytest
from django.utils import timezone

from schedweb.scheduling.invariants import check_invariants, count_submissions
from schedweb.scheduling.models import CycleRun

from .conftest import (
    WRITING_TASKS,
    make_cluster,
    needs_services,
    open_transactions,
    submit_jobs,
    variants,
    wait_all_completed,
    wait_cycles_resume,
)
from .harness import wait_for

pytestmark = needs_services
WRITE_SLEEP = "0.3"  # each cycle waits this long inside its write transaction: kills land there often


@pytest.mark.timeout(900)
@pytest.mark.parametrize("kills", variants(3, 20))
def test_worker_killed_at_random_points(kills, procs, soak_report):
    make_cluster()
    rng = random.Random(20261122)
    submitted: list[str] = []
    during_write = 0
    for i in range(kills):
        submitted += submit_jobs(f"k{i}", 3)
        before = CycleRun.objects.count()
        worker = procs.worker(f"worker{i}", SCHEDWEB_CYCLE_WRITE_SLEEP=WRITE_SLEEP)
        if i == 0:
            # The first kill lands inside a write transaction (0.3 s long): the worker's first cycle
            # binds the jobs just submitted, so it writes tasks. The others land anywhere.
            in_write = wait_for(lambda: open_transactions(WRITING_TASKS) > 0, 60, 0.02)
            assert in_write, worker.tail()
        else:
            assert wait_for(lambda b=before: CycleRun.objects.count() > b, 60), worker.tail()
            time.sleep(rng.uniform(0.0, 1.5))
            in_write = open_transactions(WRITING_TASKS) > 0
        worker.kill()  # SIGKILL to the worker and its beat
        during_write += in_write
        soak_report["faults_injected"] += 1
        # PostgreSQL rolls the dead worker's transaction back as soon as it sees the socket close.
        assert wait_for(lambda: open_transactions() == 0, 15)
        assert check_invariants() == []
        soak_report["faults_survived"] += 1
    soak_report["kills_during_write"] = during_write
    assert during_write >= 1

    moment = timezone.now()
    procs.worker("final")
    assert wait_cycles_resume(moment), procs.started[-1].tail()
    # Every job submitted across the kills is scheduled, runs and completes: nothing lost or stuck.
    assert wait_all_completed("rel", timeout=90), procs.started[-1].tail()
    assert check_invariants() == []
    counts = count_submissions(namespace="rel")
    soak_report.update(submitted=len(submitted), stored=counts.jobs, lost=len(submitted) - counts.jobs)
    assert (counts.jobs, counts.tasks) == (len(submitted), 2 * len(submitted))

"""Two `celery worker -B` processes at once (two beats sending cycles, two workers running them):
the advisory leader lock lets one cycle write at a time, so no node is ever double-booked."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from django.utils import timezone

from schedweb.core.models import Task
from schedweb.scheduling.invariants import check_invariants, count_submissions
from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster, needs_services, submit_jobs, variants, wait_cycles_resume

pytestmark = needs_services
BOUND_ONCE = ("Binding", "Bound", "Running", "Succeeded")  # no evictions here: a task is bound at most once


def skipped_since(start: datetime) -> bool:
    """True once a cycle stood down because the other leader held the lock."""
    return CycleRun.objects.filter(started__gte=start, skipped=True).exists()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seconds", variants(4, 30))
def test_two_beats_never_double_book(seconds, procs, soak_report):
    make_cluster(nodes=2, cpu="4")  # 8 cores for 1-core gangs arriving faster than they finish
    start = timezone.now()
    workers = [procs.worker(name, SCHEDWEB_CYCLE_WRITE_SLEEP="0.3") for name in ("beat-a", "beat-b")]
    assert wait_cycles_resume(start), workers[0].tail() + workers[1].tail()
    soak_report["faults_injected"] = 1
    submitted: list[str] = []
    seen: list[str] = []
    deadline, latest = time.monotonic() + seconds, time.monotonic() + seconds + 60
    wave = 0
    # Run `seconds`, and on until the two leaders have collided once (a slow second boot).
    while time.monotonic() < deadline or (time.monotonic() < latest and not skipped_since(start)):
        submitted += submit_jobs(f"w{wave}", 4, duration=1.0)
        wave += 1
        time.sleep(1.0)
        seen += check_invariants()  # at every moment, not only at the end
    procs.stop_all()  # both at once (warm shutdown: a running cycle finishes)
    runs = CycleRun.objects.filter(started__gte=start)
    done = runs.filter(skipped=False, errors="")
    binds = sum(done.values_list("binds", flat=True))
    bound = Task.objects.filter(status__in=BOUND_ONCE).count()
    counts = count_submissions(namespace="rel")
    soak_report.update(cycles=done.count(), skipped=runs.filter(skipped=True).count(), binds=binds,
                       submitted=len(submitted), stored=counts.jobs, lost=len(submitted) - counts.jobs)
    assert seen == [] and check_invariants() == []
    assert binds == bound > 0  # every bind recorded once: no task bound by both leaders
    assert runs.filter(skipped=True).exists()  # the two really overlapped and one stood down
    assert not runs.exclude(errors="").exists()
    assert counts.jobs == len(submitted)
    soak_report["faults_survived"] = 1

"""A job cancelled while a cycle is in its write phase: both succeed, the cancel after the cycle (it
waits for the job row the cycle locked before its tasks). Found by the soak load test as a deadlock
(the cycle used to lock task rows, then job rows; the cancel a job, then its tasks)."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connections

from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, Task
from schedweb.scheduling import cycle
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun
from tests.schedweb.scheduling.conftest import make_cluster, submit

from .conftest import WRITING_TASKS, needs_services, open_transactions
from .harness import wait_for

pytestmark = needs_services


@pytest.mark.timeout(120)
def test_cancel_during_cycle_write_phase_does_not_deadlock(monkeypatch):
    make_cluster(nodes=1, cpu="4")
    job = submit("a", tasks=2)
    # The cycle holds its new task row locks for 1 s between the task UPDATE and the job UPDATE.
    monkeypatch.setenv(cycle.WRITE_SLEEP_ENV, "1.0")
    runs: list[CycleRun] = []

    def run_cycle() -> None:
        try:
            runs.append(cycle_run())
        finally:
            connections.close_all()

    thread = threading.Thread(target=run_cycle)
    thread.start()
    try:
        # The cycle sleeps inside its write phase, its task rows locked.
        assert wait_for(lambda: open_transactions(WRITING_TASKS) > 0, 30, 0.05)
        cancel_error = ""
        try:
            # Waits for the job row the cycle holds (locked before its task rows), then cancels
            # the tasks the cycle has just bound.
            job_cancel(job=Job.objects.get(pk=job.pk))
        except OperationalError as exc:
            cancel_error = str(exc).splitlines()[0]
    finally:
        thread.join(60)
    assert (cancel_error, runs[0].errors, runs[0].binds) == ("", "", 2)
    assert Job.objects.get(pk=job.pk).phase == "Cancelled"
    # The cancel came second: it saw the cycle's binds and released them.
    assert sorted(Task.objects.filter(job=job).values_list("status", flat=True)) == ["Releasing"] * 2

"""Concurrent clients submitting (with Idempotency-Key replays), cancelling and reading against a
real gunicorn server while a Celery worker runs cycles: zero 5xx, every accepted job stored once;
and the issue-15 poison job, stored first, makes no cycle fail (the load's tasks keep starting)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from schedweb.core.models import Job, Task
from schedweb.scheduling.invariants import check_invariants

from .conftest import (
    assert_load_outcome,
    good_cycles_after,
    needs_services,
    start_stack,
    variants,
)
from .load import POISON_NAMESPACE, cycle_health, run_load

pytestmark = needs_services


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("clients", "seconds"), variants((8, 5), (64, 60)))
def test_concurrent_clients_lose_nothing(clients, seconds, procs, soak_report):
    token, _, server, url = start_stack(procs, threads=max(8, clients // 4), nodes=4, cpu="8")
    start = timezone.now()
    stats = run_load(url, token, clients=clients, seconds=seconds, namespace="load", queue="q", poison=True)
    soak_report["clients"] = clients
    soak_report.update(cycle_health(start, stats.poisoned_at))
    assert_load_outcome(stats, "load", soak_report, server.log)
    assert stats.statuses[201] > 0 and stats.replays > 0 and stats.statuses[200] > 0
    assert good_cycles_after(stats.poisoned_at) > 0  # cycles kept running under the load
    # The poison job is set aside (issue 15), the cycles around it succeed and still start tasks.
    assert soak_report["cycles_failed_after_poison"] == 0, soak_report
    assert Task.objects.filter(job__namespace="load", started__gt=stats.poisoned_at).exists()
    assert Job.objects.get(namespace=POISON_NAMESPACE).reason_code == "InvalidJob"
    assert check_invariants() == []

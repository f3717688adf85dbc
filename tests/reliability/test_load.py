"""Concurrent clients submitting (with Idempotency-Key replays), cancelling and reading against a
real gunicorn server while a Celery worker runs cycles: zero 5xx, every accepted job stored once."""

from __future__ import annotations

import pytest
from django.utils import timezone

from schedweb.scheduling.invariants import check_invariants

from .conftest import (
    assert_load_outcome,
    good_cycles_after,
    needs_services,
    start_stack,
    variants,
)
from .load import run_load

pytestmark = needs_services


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("clients", "seconds"), variants((8, 5), (64, 60)))
def test_concurrent_clients_lose_nothing(clients, seconds, procs, soak_report):
    token, _, server, url = start_stack(procs, threads=max(8, clients // 4), nodes=4, cpu="8")
    start = timezone.now()
    stats = run_load(url, token, clients=clients, seconds=seconds, namespace="load", queue="q")
    soak_report["clients"] = clients
    assert_load_outcome(stats, "load", soak_report, server.log)
    assert stats.statuses[201] > 0 and stats.replays > 0 and stats.statuses[200] > 0
    assert good_cycles_after(start) > 0  # cycles kept running under the load
    assert check_invariants() == []

"""PostgreSQL stopped and started again under API load with cycles running: while it is down the
API answers 503 with the JSON error body (never a 500); afterwards the API and the cycles resume,
and every accepted submission is stored exactly once."""

from __future__ import annotations

import threading
import time

import pytest
import requests
from django.utils import timezone

from schedweb.core.models import Job
from schedweb.scheduling.invariants import check_invariants

from .conftest import (
    assert_load_outcome,
    needs_services,
    start_stack,
    variants,
    wait_cycles_resume,
)
from .harness import postgres_down, wait_for
from .load import DB_DOWN_BODY, LoadStats, run_load

# Stops a service every test shares: runs alone, after the parallel part of `make test`.
pytestmark = [*needs_services, pytest.mark.exclusive]


def probe_while_down(url: str, token: str, seconds: float) -> tuple[int, list[str]]:
    """Read and submit through the API while the database is down; (probes, unexpected answers)."""
    headers = {"Authorization": f"Token {token}"}
    body = {"namespace": "probe", "name": "while-down", "queue": "q", "tasks": [{"name": "t"}]}
    bad: list[str] = []
    probes = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for method, path, kwargs in (("GET", "/api/v1/queues/", {}),
                                     ("POST", "/api/v1/jobs/", {"json": body}),
                                     ("GET", "/api/v1/jobs/?namespace=pg", {})):
            response = requests.request(method, url + path, headers=headers, timeout=30, **kwargs)
            probes += 1
            if (response.status_code, response.headers.get("Retry-After")) != (503, "5") or \
                    response.json() != DB_DOWN_BODY:
                bad.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
        time.sleep(0.3)
    return probes, bad


def api_answers(url: str, token: str) -> bool:
    """True once GET /api/v1/queues/ answers 200 again."""
    try:
        return requests.get(f"{url}/api/v1/queues/", headers={"Authorization": f"Token {token}"},
                            timeout=10).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("restarts", "clients", "down", "seconds"),
                         variants((1, 4, 2.0, 8), (3, 16, 5.0, 45)))
def test_postgres_restart_during_load(restarts, clients, down, seconds, procs, soak_report):
    token, worker, server, url = start_stack(procs)
    stats = LoadStats()
    load = threading.Thread(target=run_load, args=(url, token), daemon=True, kwargs={
        "clients": clients, "seconds": seconds, "namespace": "pg", "queue": "q", "allow_db_down": True,
        "stats": stats})
    load.start()
    bad: list[str] = []
    for _ in range(restarts):
        time.sleep(1.5)
        with postgres_down():
            soak_report["faults_injected"] += 1
            probes, wrong = probe_while_down(url, token, down)
            soak_report["requests"] += probes
            bad += wrong
        back = timezone.now()
        assert wait_for(lambda: api_answers(url, token), 30)
        assert wait_cycles_resume(back, timeout=60), worker.tail()
        soak_report["faults_survived"] += 1
    load.join(seconds + 180)
    assert not load.is_alive()
    assert bad == []
    assert stats.db_down_503 > 0 or restarts == 0  # the clients saw the outage too, as clean 503s
    assert_load_outcome(stats, "pg", soak_report, server.log)
    assert not Job.objects.filter(namespace="probe").exists()  # a 503 submission stored nothing
    assert check_invariants() == []

"""Redis (the Celery broker and the cache) shut down while the API is under load and cycles run:
the API keeps serving reads and submissions, and once Redis is back the cycles resume."""

from __future__ import annotations

import threading
import time

import pytest
from django.utils import timezone

from schedweb.scheduling.invariants import check_invariants, count_submissions

from .conftest import (
    assert_load_outcome,
    assert_nothing_lost,
    needs_services,
    start_stack,
    submit_jobs,
    variants,
    wait_all_completed,
    wait_cycles_resume,
)
from .harness import redis_down
from .load import LoadStats, run_load

pytestmark = needs_services


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("outage", "clients"), variants((3.0, 4), (30.0, 16)))
def test_redis_outage_api_serves_and_cycles_resume(outage, clients, procs, soak_report):
    token, worker, server, url = start_stack(procs)
    stats = LoadStats()
    load = threading.Thread(target=run_load, args=(url, token), daemon=True, kwargs={
        "clients": clients, "seconds": outage + 4, "namespace": "redis", "queue": "q", "stats": stats})
    load.start()
    time.sleep(1.5)
    during = LoadStats()  # what the API answered while Redis was down
    with redis_down():
        soak_report["faults_injected"] += 1
        before = dict(stats.statuses)
        # Not through the API (its answers are the load's): the database is up, the broker is not.
        submitted = submit_jobs("during", 3)
        time.sleep(outage)
        during.statuses.update({k: v - before.get(k, 0) for k, v in stats.statuses.items()})
    upto = dict(stats.statuses)
    back, t_back = timezone.now(), time.monotonic()
    # Cycles resume once the broker is back, and the jobs submitted meanwhile all run to the end.
    assert wait_cycles_resume(back, timeout=90), worker.tail()
    soak_report["resume_seconds"] = round(time.monotonic() - t_back, 1)
    assert wait_all_completed("rel", timeout=90), worker.tail()
    assert count_submissions(namespace="rel").jobs == len(submitted)
    load.join(outage + 180)
    assert not load.is_alive()
    assert check_invariants() == []
    soak_report["faults_survived"] += 1  # the scheduler survived; the API part is asserted last
    assert_nothing_lost(stats, "redis", soak_report)  # even with the API failing, nothing half-stored
    failed = {code: n for code, n in during.statuses.items() if code >= 500 and n}
    after = {code: n - upto.get(code, 0) for code, n in stats.statuses.items() if n - upto.get(code, 0)}
    soak_report["statuses_during"], soak_report["statuses_after"] = dict(during.statuses), after
    assert not any(code >= 500 for code in after), after  # once Redis is back the API is healthy again
    soak_report.update(requests=stats.requests, errors=stats.server_errors + stats.connection_errors,
                       load=[stats.as_json()], first_errors=stats.errors[:5])
    # The API kept serving: the cache falls back to process memory (schedweb.http.cache_backend).
    assert not failed and not stats.server_errors and not stats.connection_errors, (
        f"answers while Redis was down: {dict(during.statuses)}; errors: {stats.errors[:3]}")
    assert during.statuses.get(200, 0) + during.statuses.get(201, 0) > 0, dict(during.statuses)
    # Counted again (with the 5xx checks) by assert_load_outcome.
    soak_report.update(submitted=0, stored=0, lost=0, requests=0, errors=0, load=[])
    assert_load_outcome(stats, "redis", soak_report, server.log)

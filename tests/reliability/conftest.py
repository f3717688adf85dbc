"""Fixtures of the reliability tests: started processes (always stopped), a small cluster with an
API token, cycle waiters, and the soak report each test fills (written to SOAK_REPORT_DIR)."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.utils import timezone

from schedweb.api.services import token_create
from schedweb.core import services
from schedweb.core.models import Job
from schedweb.scheduling.invariants import count_submissions
from schedweb.scheduling.models import CycleRun
from tests.schedweb.scheduling.conftest import SIMPLE_CONF

from .harness import Proc, Processes, clear_celery_queue, pg_start, redis_start, wait_for
from .load import LoadStats

# A deadlock shows as a 503 "database unavailable" with the database up (the soak load test found
# one between job_cancel and the cycle's write phase, fixed by the job-before-tasks lock order of
# scheduling.writes.lock_jobs): the load tests count them from the server log and fail on any.
DEADLOCK_LOG = "deadlock detected"

needs_services = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL (DATABASE_URL=postgres://...)"),
    pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def procs(tmp_path: Path):
    """Start workers/servers through this; every one is stopped at teardown, then the services
    are checked to be up (a failed test must not leave PostgreSQL or Redis down)."""
    clear_celery_queue()
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()
        pg_start()
        redis_start()
        connections.close_all()


@pytest.fixture
def soak_report(request):
    """A dict of counts the test fills; written as JSON to $SOAK_REPORT_DIR/<test>.json (soak summary)."""
    report: dict = {"test": request.node.nodeid, "faults_injected": 0, "faults_survived": 0, "requests": 0,
                    "bad_inputs": 0, "errors": 0, "lost": 0, "submitted": 0, "stored": 0}
    yield report
    out_dir = os.environ.get("SOAK_REPORT_DIR")
    if out_dir:
        report["outcome"] = getattr(request.node, "rep_call_outcome", "error")
        path = Path(out_dir) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name) + ".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, sort_keys=True, default=str))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Remember how the test body ended (the soak report records it; xfailed = a known bug)."""
    report = yield
    if report.when == "call":
        item.rep_call_outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
    return report


def make_cluster(*, nodes: int = 4, cpu: str = "8", queue: str = "q") -> str:
    """Nodes n0.. of `cpu` cores / 32Gi, one leaf queue, the simple conf; returns a staff API token."""
    services.queue_create(name=queue)
    for i in range(nodes):
        services.node_create(name=f"n{i}", allocatable={"cpu": cpu, "memory": "32Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    user = get_user_model().objects.create_user("reliability", password="pw", is_staff=True)
    return token_create(user=user, name="reliability")[1]


class Stack(NamedTuple):
    """A cluster served by real processes: a Celery worker with its beat, gunicorn at `url`."""

    token: str
    worker: Proc
    server: Proc
    url: str


def start_stack(procs: Processes, *, threads: int = 8, **cluster: Any) -> Stack:
    """make_cluster(**cluster), then a worker and a server; returns once cycles run."""
    token = make_cluster(**cluster)
    worker = procs.worker()  # boots while the server does
    server, url = procs.server(threads=threads)
    assert wait_cycles_resume(timeout=60), worker.tail()
    return Stack(token, worker, server, url)


def submit_jobs(prefix: str, count: int, *, namespace: str = "rel", tasks: int = 2,
                duration: float = 0.5) -> list[str]:
    """`count` jobs <prefix>-<i> of `tasks` half-core tasks through the service; their names."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        services.job_submit(namespace=namespace, name=name, queue="q", min_member=tasks,
                            tasks=[{"name": f"{name}-{t}", "request": {"cpu": "500m", "memory": "256Mi"},
                                    "duration": duration} for t in range(tasks)])
    return names


def good_cycles_after(moment: datetime) -> int:
    """Cycles that ran to the end (not skipped, no error) and started after `moment`."""
    connections.close_all()  # a fresh connection: the old one may have died with a restart
    return CycleRun.objects.filter(started__gt=moment, skipped=False, errors="").count()


def wait_cycles_resume(moment: datetime | None = None, *, timeout: float = 60) -> bool:
    """True once a complete cycle started after `moment` (default: now)."""
    moment = moment or timezone.now()
    return wait_for(lambda: good_cycles_after(moment) > 0, timeout, 0.3)


def wait_all_completed(namespace: str, *, timeout: float) -> bool:
    """True once every job of `namespace` is finished (Completed or Cancelled): nothing stuck."""
    return wait_for(lambda: not Job.objects.filter(namespace=namespace).exclude(
        phase__in=("Completed", "Cancelled")).exists(), timeout, 0.5)


WRITING_TASKS = "UPDATE %core_task%"  # the last statement before the cycle's write-phase sleep


def open_transactions(last_query_like: str = "%") -> int:
    """Other sessions of the test database idle inside a transaction whose last statement matches
    (with WRITING_TASKS: a cycle held in its write phase, its task rows locked)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND state = 'idle in transaction' AND pid <> pg_backend_pid() AND query LIKE %s",
                       [last_query_like])
        return int(cursor.fetchone()[0])


def assert_nothing_lost(stats: LoadStats, namespace: str, report: dict) -> None:
    """Every submission the clients saw accepted (201) is stored once, and nothing else is."""
    connections.close_all()
    stored = dict(Job.objects.filter(namespace=namespace).values_list("idempotency_key", "id"))
    report["submitted"] += len(stats.accepted)
    report["stored"] += len(stored)
    report["lost"] += len(set(stats.accepted.items()) ^ set(stored.items()))
    assert stats.unresolved == []
    assert stats.accepted == stored  # count in = count stored, key by key, id by id
    assert count_submissions(namespace=namespace).jobs == len(stats.accepted)


def assert_load_outcome(stats: LoadStats, namespace: str, report: dict,
                        server_log: Path | None = None) -> None:
    """No 5xx (but the database-down 503), no connection error, every accepted job stored once.

    Any 503 while the database was up fails; the report counts those the server logged as deadlocks.
    """
    log = server_log.read_text(errors="replace") if server_log is not None and server_log.exists() else ""
    deadlocks = sum(1 for line in log.splitlines() if "database unavailable while serving" in line
                    and DEADLOCK_LOG in line)
    report["deadlock_503"] = deadlocks
    report["requests"] += stats.requests
    report["errors"] += len(stats.errors) + stats.unexpected_503
    report.setdefault("load", []).append(stats.as_json())
    assert_nothing_lost(stats, namespace, report)
    assert stats.errors == [], stats.errors
    assert stats.server_errors == 0 and stats.connection_errors == 0, stats.as_json()
    assert stats.unexpected_503 == 0, (f"{stats.unexpected_503} 503 'database unavailable' while the "
                                       f"database was up ({deadlocks} logged as deadlocks)")


def variants(fast: object, soak: object) -> list:
    """Parametrize values: a `fast` case for `make test` and a `soak`-marked one for `make soak`."""
    def values(v: object) -> tuple:
        return v if isinstance(v, tuple) else (v,)
    return [pytest.param(*values(fast), id="fast"),
            pytest.param(*values(soak), id="soak", marks=pytest.mark.soak)]

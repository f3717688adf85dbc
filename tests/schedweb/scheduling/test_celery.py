"""A real Celery worker with embedded beat binds jobs submitted through the service layer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster, requires_postgres, statuses, submit
from .conftest import test_database_url as database_url

pytestmark = [requires_postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")]
ROOT = Path(__file__).resolve().parents[3]
PERIOD = 0.5


def test_worker_with_beat_binds_submitted_jobs(tmp_path):
    # No stale cycle messages from earlier runs (Celery's default queue and unacked sets only).
    redis.Redis.from_url(settings.REDIS_URL).delete("celery", "unacked", "unacked_index")
    make_cluster(nodes=2, cpu="4")
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL, "DEBUG": "1",
           "SCHEDULE_PERIOD": str(PERIOD), "SIMULATED_AGENT": "1"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("celery")), "-A", "schedweb", "worker", "-B", "--pool=solo",
         "--loglevel=INFO", "--schedule", str(tmp_path / "beat-schedule")],
        cwd=ROOT, env=env, stdout=(tmp_path / "worker.log").open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not CycleRun.objects.filter(skipped=False).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert CycleRun.objects.exists(), (tmp_path / "worker.log").read_text()[-3000:]
        submit("a", tasks=3, cpu="2")
        deadline = time.monotonic() + 10 * PERIOD
        want = {("Running", "n0"), ("Running", "n1")}
        while time.monotonic() < deadline and set(statuses("a").values()) != want:
            time.sleep(0.1)
        got = statuses("a")
        assert sorted(got.values()) == [("Running", "n0"), ("Running", "n0"), ("Running", "n1")], got
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    runs = CycleRun.objects.filter(skipped=False, errors="")
    assert runs.count() >= 2
    assert sum(runs.values_list("binds", flat=True)) == 3

"""Smoke of the forecast benchmark at size S: the data, the declared durations, three runs (never timing)."""

from __future__ import annotations

import psycopg
import pytest
from django.utils import timezone

from schedweb.core.models import Job, Task

pytestmark = pytest.mark.django_db(transaction=True)
BASES = ("declared", "history", "unknown", "beyond_horizon", "never")


def test_durations_are_declared_per_job(pg: psycopg.Connection) -> None:
    from scheduler_core.bench.generator import generate
    from schedweb.bench.db_bench import reset
    from schedweb.bench.forecast_bench import DURATIONS, declare_durations

    reset(pg, generate("S", "steady", seed=1))
    now = timezone.now()
    assert declare_durations(pg, now) == Task.objects.count()
    rows = Task.objects.values_list("job_id", "duration", "status", "started")
    for job_id, duration, status, started in rows:
        assert duration == DURATIONS[job_id % len(DURATIONS)]
        if status == "Running":
            assert 0 <= (now - started).total_seconds() < duration
        else:
            assert started is None


def test_three_runs_answer_every_waiting_job(pg: psycopg.Connection, settings) -> None:
    from schedweb.bench.forecast_bench import run_case, targets

    settings.FORECAST_CPU_BUDGET_S = 0.2  # where it stops is CPU time: only what holds anywhere is checked
    rows = run_case("S", seed=1, conn=pg, long_budget=0.2)
    assert [(r["durations"], r["budget_s"], r["errors"]) for r in rows] == [
        ("none", 0.2, ""), ("declared", 0.2, ""), ("declared", 0.2, "")]
    waiting = rows[0]["jobs"]
    assert waiting > 0 and Job.objects.exists()
    for row in rows:
        assert row["jobs"] == waiting == sum(row[b] for b in BASES)
    assert rows[0]["unknown"] > 0  # running work without durations: what waits on it is unknown
    assert rows[1]["unknown"] == rows[2]["unknown"] == 0  # every task declares its duration
    assert targets(rows) == ""  # the target is M's

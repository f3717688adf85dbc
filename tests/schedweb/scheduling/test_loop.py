"""The run_scheduler loop through database outages, and what a failed cycle records."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from schedweb.scheduling import cycle, cycle_metrics, metric_totals
from schedweb.scheduling.loop import run_loop
from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster


class FakeTime:
    """A clock that only sleep() moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_loop_backs_off_logs_once_per_outage_and_never_exits(caplog):
    outcomes = ["ok", "locked", "locked", "locked", "locked", "ok", "ok", "gone", "ok"]
    fake = FakeTime()
    starts: list[float] = []
    reported: list[dict] = []

    def step() -> dict:
        starts.append(fake.now)
        outcome = outcomes[len(starts) - 1]
        if outcome == "locked":
            raise OperationalError("database is locked")
        if outcome == "gone":
            raise OperationalError("server closed the connection unexpectedly")
        return {"cycle": len(starts)}

    with caplog.at_level(logging.DEBUG, logger="schedweb.scheduling.loop"):
        run_loop(step, 2.0, stopped=lambda: len(starts) == len(outcomes) and fake.now >= starts[-1] + 2,
                 report=reported.append, clock=fake.clock, sleep=fake.sleep)
    gaps = [round(b - a, 6) for a, b in zip(starts, starts[1:], strict=False)]
    # A period after a success; after failures 2, 4, 8, 16 s; back to the period.
    assert gaps == [2.0, 2.0, 4.0, 8.0, 16.0, 2.0, 2.0, 2.0]
    assert [r["cycle"] for r in reported] == [1, 6, 7, 9]
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert records == [
        ("ERROR", "scheduler: cycle failed, retrying with back-off until it succeeds: "
                  "OperationalError: database is locked"),
        ("WARNING", "scheduler: steps run again after 30.0 s (4 failed tries)"),
        ("ERROR", "scheduler: cycle failed, retrying with back-off until it succeeds: "
                  "OperationalError: server closed the connection unexpectedly"),
        ("WARNING", "scheduler: steps run again after 2.0 s (1 failed tries)")]


def test_the_back_off_stops_growing_at_a_minute():
    fake = FakeTime()
    starts: list[float] = []

    def step() -> dict:
        starts.append(fake.now)
        raise OperationalError("database is locked")

    run_loop(step, 2.0, stopped=lambda: len(starts) >= 9, clock=fake.clock, sleep=fake.sleep)
    assert [round(b - a, 6) for a, b in zip(starts, starts[1:], strict=False)] == [
        2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


@pytest.mark.django_db
def test_a_failed_cycle_is_recorded_and_counted(monkeypatch):
    make_cluster(nodes=1)

    def broken(*_: object) -> None:
        raise OperationalError("deadlock detected")

    monkeypatch.setattr(cycle, "_run_locked", broken)
    run = cycle.cycle_run()
    assert (run.pk is not None, run.errors) == (True, "OperationalError: deadlock detected")
    totals = metric_totals.read()
    assert totals["schedweb_cycles"]['{"outcome":"failed"}'][""] == 1.0
    assert totals["volcano_schedule_attempts"]['{"result":"error"}'][""] == 1.0


@pytest.mark.django_db
def test_a_failure_that_cannot_be_recorded_goes_to_the_loop(monkeypatch, caplog):
    """The database is locked or gone: the cycle neither logs nor records; the loop will."""
    make_cluster(nodes=1)

    def locked(*_: object) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(cycle, "_run_locked", locked)
    monkeypatch.setattr(cycle_metrics, "record_failure", locked)
    with pytest.raises(cycle.DatabaseUnavailable, match="database is locked"):
        cycle.cycle_run()
    assert not CycleRun.objects.exists()
    assert not [r for r in caplog.records if r.name == "schedweb.scheduling.cycle"]

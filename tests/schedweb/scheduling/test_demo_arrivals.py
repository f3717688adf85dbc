"""The demo's arrival process (schedweb.scheduling.demo_arrivals): one job per 10 s slot, the
shapes in turn, capped by the number of waiting jobs, on only with DEMO_ARRIVALS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schedweb.core import services
from schedweb.core.demo_data import ARRIVAL_SHAPES
from schedweb.core.models import Job, Queue
from schedweb.scheduling.demo import load_demo
from schedweb.scheduling.demo_arrivals import arrive
from schedweb.scheduling.models import CycleRun
from schedweb.scheduling.tasks import cycle_and_agent

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)  # slot 176722560, a multiple of 7: the first shape's turn
WAITING_IN_DEMO = 17  # 15 Pending (tf-dist included) and 2 Inqueue jobs


def cycle(seconds: float, skipped: bool = False) -> CycleRun:
    """A recorded cycle started `seconds` after T0 (what cycle_run would leave)."""
    return CycleRun.objects.create(started=T0 + timedelta(seconds=seconds), skipped=skipped)


@pytest.fixture
def demo(db):
    load_demo()


def job_row(job: Job) -> tuple:
    tasks = list(job.tasks.order_by("name").values_list("name", "status", "duration"))
    return job.uid, job.queue.name, job.phase, job.min_member, tasks


def test_first_cycle_of_each_slot_submits_the_next_shape(demo):
    first = arrive(cycle(0))
    assert job_row(first) == ("nlp/eval-batch-176722560", "nlp-eval", "Pending", 2,
                              [("eval-batch-176722560-0", "Pending", 90.0),
                               ("eval-batch-176722560-1", "Pending", 99.0)])
    assert arrive(cycle(2)) is None and arrive(cycle(9.9)) is None  # same slot
    second = arrive(cycle(10))
    assert job_row(second)[:4] == ("prod/etl-hourly-176722561", "etl", "Pending", 3)
    assert arrive(cycle(12, skipped=True)) is None
    # Slots without cycles are skipped with their shapes: the shape follows the slot number.
    assert arrive(cycle(40)).uid == "prod/report-176722564"


@pytest.mark.parametrize(("cap", "arrives"), [(WAITING_IN_DEMO, False), (WAITING_IN_DEMO + 1, True)])
def test_no_arrival_while_the_cap_of_waiting_jobs_is_reached(demo, settings, cap, arrives):
    settings.DEMO_ARRIVALS_MAX_WAITING = cap
    assert Job.objects.filter(phase__in=("Pending", "Inqueue")).count() == WAITING_IN_DEMO
    assert (arrive(cycle(0)) is not None) is arrives


def test_a_closed_demo_queue_skips_its_turn_without_failing(demo, caplog):
    services.queue_set_state(queue=Queue.objects.get(name="nlp-eval"), state="Closed")
    assert arrive(cycle(0)) is None
    assert "demo arrival nlp/eval-batch-176722560 not submitted" in caplog.text
    assert arrive(cycle(10)).uid == "prod/etl-hourly-176722561"


@pytest.mark.parametrize("enabled", [False, True])
def test_cycle_and_agent_arrives_only_with_demo_arrivals(demo, settings, enabled):
    settings.DEMO_ARRIVALS = enabled
    settings.SIMULATED_AGENT = False
    out = cycle_and_agent()
    started = CycleRun.objects.get(pk=out["cycle"]).started
    slot = int(started.timestamp() // 10)
    shape = ARRIVAL_SHAPES[slot % len(ARRIVAL_SHAPES)]
    expected = f"{shape['namespace']}/{shape['name']}-{slot}"
    assert out.get("arrived") == (expected if enabled else None)


def test_arrivals_are_off_by_default():
    from django.conf import settings

    assert settings.DEMO_ARRIVALS is False


def test_the_loop_reports_heartbeats_after_the_agent_step(demo, settings):
    settings.SIMULATED_AGENT = True
    out = cycle_and_agent()
    assert out["agent"]["heartbeats"] == 21  # every demo node, once per 10 s
    assert cycle_and_agent()["agent"]["heartbeats"] == 0

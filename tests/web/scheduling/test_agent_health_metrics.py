"""Simulated agent, rescheduling's lastRun, /healthz scheduler state and /metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import CollectorRegistry

from schedweb.core import services
from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, Task
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics import SchedulerCollector
from schedweb.scheduling.models import CycleRun

from .conftest import SIMPLE_CONF, make_cluster, statuses, submit

pytestmark = pytest.mark.django_db


def test_agent_runs_finishes_and_completes():
    make_cluster(nodes=1)
    submit("a", tasks=2, duration=10)
    t0 = timezone.now()
    cycle_run(now=t0)
    step = agent_step(now=t0, period=2)
    assert (step.started, step.succeeded, step.completed_jobs) == (2, 0, 0)
    assert set(statuses("a").values()) == {("Running", "n0")}
    step = agent_step(now=t0 + timedelta(seconds=9), period=2)
    assert step.succeeded == 0
    step = agent_step(now=t0 + timedelta(seconds=10), period=2)
    assert (step.succeeded, step.completed_jobs) == (2, 1)
    assert Job.objects.get(name="a").phase == "Completed"


def test_agent_releases_after_grace_period():
    make_cluster(nodes=1)
    job = submit("a", tasks=1)
    cycle_run()
    agent_step(period=2)
    job_cancel(job=job)
    released_at = Task.objects.get(name="a-0").updated
    assert agent_step(now=released_at + timedelta(seconds=3.9), period=2).released == 0
    assert agent_step(now=released_at + timedelta(seconds=4), period=2).released == 1
    assert statuses("a") == {"a-0": ("Failed", None)}


@pytest.mark.parametrize(("offsets", "ran"), [
    ((0, 2, 299, 300, 302), [True, False, False, True, False]),
])
def test_rescheduling_last_run_is_the_last_due_cycle(offsets, ran):
    make_cluster(nodes=1)
    rescheduling = "  - name: rescheduling\n    arguments: {interval: 5m}\n"
    services.scheduler_config_activate(yaml=SIMPLE_CONF + rescheduling)
    t0 = timezone.now()
    got = [cycle_run(now=t0 + timedelta(seconds=s)).rescheduling_ran for s in offsets]
    assert got == ran


def test_healthz_reports_last_cycle_age_and_degrades(client, settings):
    settings.SCHEDULE_PERIOD = 2
    assert client.get("/healthz").json()["scheduler"] == {"state": "unknown"}
    make_cluster(nodes=1)
    cycle_run()
    body = client.get("/healthz").json()
    assert (body["status"], body["scheduler"]["state"]) == ("ok", "ok")
    assert 0 <= body["scheduler"]["last_cycle_age_seconds"] < 10
    CycleRun.objects.update(started=timezone.now() - timedelta(seconds=11), duration_seconds=0)
    body = client.get("/healthz").json()
    assert (body["status"], body["scheduler"]["state"]) == ("degraded", "degraded")
    assert body["scheduler"]["last_cycle_age_seconds"] >= 11


def test_collector_registration_runs_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        CollectorRegistry(auto_describe=True).register(SchedulerCollector())


def test_metrics_endpoint(client):
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=2, cpu="1")
    submit("big", tasks=1, cpu="16")
    cycle_run()
    text = client.get("/metrics").content.decode()
    for line in ('volcano_queue_allocated_milli_cpu{queue_name="q"} 2000.0',
                 'volcano_queue_allocated_memory_bytes{queue_name="q"} 2.147483648e+09',
                 'volcano_queue_weight{queue_name="q"} 1.0',
                 'schedweb_cycle_duration_seconds_count 1.0',
                 'schedweb_cycles_total{outcome="ok"} 1.0',
                 'schedweb_cycle_conflicts_total 0.0'):
        assert line in text.splitlines(), line
    pending = [ln for ln in text.splitlines() if ln.startswith("schedweb_pending_jobs{")]
    assert len(pending) == 1 and pending[0].endswith(" 1.0")
    assert "volcano_queue_deserved_milli_cpu{" in text and "volcano_queue_share{" in text
    assert "schedweb_last_cycle_age_seconds " in text

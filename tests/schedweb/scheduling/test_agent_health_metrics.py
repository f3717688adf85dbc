"""Simulated agent, rescheduling's lastRun, /healthz scheduler state (/metrics: test_metrics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, Node, Task
from schedweb.scheduling.agent import JITTER, agent_step, node_usage, report_heartbeats
from schedweb.scheduling.cycle import cycle_run
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


def test_healthz_answers_503_once_no_cycle_succeeded_for_five_periods(client, settings):
    settings.SCHEDULE_PERIOD = 2
    assert client.get("/healthz").json()["scheduler"] == {"state": "unknown"}
    make_cluster(nodes=1)
    cycle_run()
    response = client.get("/healthz")
    body = response.json()
    assert (response.status_code, body["status"], body["scheduler"]["state"]) == (200, "ok", "ok")
    assert 0 <= body["scheduler"]["last_cycle_age_seconds"] < 10
    CycleRun.objects.update(started=timezone.now() - timedelta(seconds=9), duration_seconds=0)
    assert client.get("/healthz").status_code == 200  # 4.5 periods
    # Failing cycles since: recent ones, but no success for 5.5 periods.
    CycleRun.objects.update(started=timezone.now() - timedelta(seconds=11), duration_seconds=0)
    CycleRun.objects.create(started=timezone.now(), errors="OperationalError: database is locked")
    response = client.get("/healthz")
    body = response.json()
    assert (response.status_code, body["status"], body["scheduler"]["state"]) == (503, "down", "down")
    assert body["scheduler"]["last_success_age_seconds"] >= 11
    assert body["scheduler"]["last_cycle_age_seconds"] < 10
    # Liveness (the compose healthcheck the worker waits on): the web process is up.
    live = client.get("/healthz?live=1")
    assert (live.status_code, live.json()["status"]) == (200, "down")
    cycle_run()  # back
    assert client.get("/healthz").status_code == 200


def test_healthz_down_when_no_cycle_ever_succeeded(client, settings):
    settings.SCHEDULE_PERIOD = 2
    CycleRun.objects.create(started=timezone.now() - timedelta(seconds=9), errors="boom")
    assert client.get("/healthz").json()["scheduler"]["state"] == "degraded"
    CycleRun.objects.create(started=timezone.now() - timedelta(seconds=11), errors="boom")
    response = client.get("/healthz")
    assert (response.status_code, response.json()["scheduler"]["last_success"]) == (503, None)


def test_healthz_judges_each_shard_on_its_own_cycles(client, settings):
    """Two shard instances: one stopped (its last success 11 s ago, 5.5 periods) makes the whole
    scheduler down, although the other keeps succeeding; each shard's figures are in "shards"."""
    settings.SCHEDULE_PERIOD = 2
    settings.SCHEDULER_SHARDS = ["a", "b"]
    now = timezone.now()
    CycleRun.objects.create(started=now, shard="a")
    CycleRun.objects.create(started=now - timedelta(seconds=11), shard="b")
    response = client.get("/healthz")
    scheduler = response.json()["scheduler"]
    assert (response.status_code, scheduler["state"]) == (503, "down")
    assert {name: h["state"] for name, h in scheduler["shards"].items()} == {"a": "ok", "b": "down"}
    assert scheduler["last_success_age_seconds"] >= 11  # the worst shard's figures on top
    CycleRun.objects.create(started=now, shard="b")
    scheduler = client.get("/healthz").json()["scheduler"]
    assert (scheduler["state"], scheduler["shards"]["b"]["state"]) == ("ok", "ok")
    settings.SCHEDULER_SHARDS = []  # unsharded: every cycle row counts, no per-shard part
    assert "shards" not in client.get("/healthz").json()["scheduler"]


def test_agent_reports_heartbeats_from_running_tasks():
    """Usage = idle + busy * requested / allocatable + jitter (+-3, deterministic), every 10 s;
    written after agent_step (which holds task locks), never by it."""
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=2, cpu="1")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    cycle_run(now=t0)
    assert agent_step(now=t0, period=2).started == 2
    assert Node.objects.filter(usage_updated__isnull=False).count() == 0  # the step writes no node
    assert report_heartbeats(t0) == 2
    usage = {n.name: (n.usage_cpu, n.usage_memory, n.usage_updated) for n in Node.objects.all()}
    # n0 runs both tasks: cpu 2/4 (2 + 85 * 0.5 = 44.5), memory 2Gi/8Gi (5 + 75 * 0.25 = 23.75).
    assert usage == {"n0": (46.8, 23.5, t0), "n1": (4.1, 6.5, t0)}
    for name, base in (("n0", (44.5, 23.75)), ("n1", (2.0, 5.0))):
        assert all(abs(got - want) <= JITTER for got, want in zip(usage[name], base, strict=False))
    assert report_heartbeats(t0 + timedelta(seconds=9)) == 0
    assert report_heartbeats(t0 + timedelta(seconds=10)) == 2
    assert Node.objects.get(name="n0").usage_cpu != 46.8  # the next time slot's jitter


@pytest.mark.parametrize(("requested", "allocatable", "expected"), [
    (8000.0, 4000.0, 85.7),   # more than the node (pre-bound imports): capped at busy
    (0.0, 0.0, 0.7),          # no allocatable: idle only
    (4000.0, None, 0.7),      # dimension missing
])
def test_node_usage_stays_a_percentage(requested, allocatable, expected):
    assert node_usage("n0", "cpu", requested, allocatable, 1) == expected


def test_a_node_deleted_after_the_read_is_skipped(monkeypatch):
    make_cluster(nodes=2)
    real = services.node_heartbeat

    def delete_first(*, node, **kwargs):
        if node.name == "n0":
            Node.objects.filter(pk=node.pk).delete()
        return real(node=node, **kwargs)

    monkeypatch.setattr(services, "node_heartbeat", delete_first)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    assert report_heartbeats(t0) == 1
    assert list(Node.objects.values_list("name", "usage_updated")) == [("n1", t0)]

"""Simulated agent, rescheduling's lastRun, /healthz scheduler state and /metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from prometheus_client import CollectorRegistry

from schedweb.core import services
from schedweb.core.job_services import job_cancel, job_submit
from schedweb.core.models import Job, Node, Task
from schedweb.scheduling.agent import JITTER, agent_step, node_usage, report_heartbeats
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics import DEPRECATED_ALIASES, SchedulerCollector
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


GPU = "nvidia.com/gpu"


@pytest.fixture
def gpu_cluster():
    """Queue q (capability 6 cpu, 2 GPUs) on two 4-cpu nodes with 2 GPUs each; job a (2 tasks of
    1 cpu + 1 GPU) bound in one cycle, job big (16 cpu) waiting; the agent starts a 3 s after
    its submission."""
    services.queue_create(name="q", capability={"cpu": "6", GPU: "2"})
    for i in range(2):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi", GPU: 2, "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    job = job_submit(namespace="ns", name="a", queue="q", min_member=2, tasks=[
        {"name": f"a-{i}", "request": {"cpu": "1", "memory": "1Gi", GPU: 1}} for i in range(2)])
    submit("big", tasks=1, cpu="16")
    run = cycle_run()
    # Stand-in for cycle.py storing SessionResult.timing (the lead's one-line change).
    timing = {"action_enqueue_s": 0.0004, "action_allocate_s": 0.003, "session_s": 0.004,
              "plugin_gang_open_s": 2e-05}
    CycleRun.objects.filter(pk=run.pk).update(duration_seconds=0.012, timing=timing)
    agent_step(now=job.created + timedelta(seconds=3), period=2)


def scrape(client) -> list[str]:
    return client.get("/metrics").content.decode().splitlines()


def test_queue_metrics_under_volcano_names_with_gpus_and_aliases(client, gpu_cluster):
    lines = scrape(client)
    for line in (
            'volcano_queue_allocated_milli_cpu{queue_name="q"} 2000.0',
            'volcano_queue_allocated_memory_bytes{queue_name="q"} 2.147483648e+09',
            'volcano_queue_allocated_scalar_resources{queue_name="q",resource="nvidia.com/gpu"} 2000.0',
            'volcano_queue_request_milli_cpu{queue_name="q"} 18000.0',
            'volcano_queue_capacity_milli_cpu{queue_name="q"} 6000.0',
            'volcano_queue_capacity_scalar_resources{queue_name="q",resource="nvidia.com/gpu"} 2000.0',
            'volcano_queue_weight{queue_name="q"} 1.0',
            'volcano_queue_overused{queue_name="q"} 0.0',
            'volcano_queue_pod_group_inqueue_count{queue_name="q"} 2.0',
            'volcano_queue_pod_group_running_count{queue_name="q"} 0.0',
            # Deprecated aliases of the previous release, same values.
            'volcano_queue_capability_milli_cpu{queue_name="q"} 6000.0',
            "# HELP volcano_queue_capability_milli_cpu Deprecated: use volcano_queue_capacity_milli_cpu. "
            "Capability CPU (milli cores) of the queue"):
        assert line in lines, line
    # No capability memory: unlimited, not 0.
    assert not [ln for ln in lines if ln.startswith("volcano_queue_capacity_memory_bytes{")]
    assert [ln for ln in lines if ln.startswith("volcano_queue_deserved_milli_cpu{")]
    assert DEPRECATED_ALIASES["volcano_queue_real_capability_memory_bytes"] == (
        "volcano_queue_real_capacity_memory_bytes")


def test_scheduler_latency_histograms_and_counters(client, gpu_cluster):
    lines = scrape(client)
    for line in (
            'volcano_e2e_scheduling_latency_milliseconds_bucket{le="10.0"} 0.0',
            'volcano_e2e_scheduling_latency_milliseconds_bucket{le="20.0"} 1.0',
            "volcano_e2e_scheduling_latency_milliseconds_sum 12.0",
            'volcano_action_scheduling_latency_microseconds_bucket{action="allocate",le="2560.0"} 0.0',
            'volcano_action_scheduling_latency_microseconds_bucket{action="allocate",le="5120.0"} 1.0',
            'volcano_action_scheduling_latency_microseconds_sum{action="allocate"} 3000.0',
            'volcano_action_scheduling_latency_microseconds_count{action="enqueue"} 1.0',
            'volcano_plugin_scheduling_latency_microseconds_bucket{OnSession="OnSessionOpen",le="20.0",'
            'plugin="gang"} 1.0',
            'volcano_e2e_job_scheduling_latency_milliseconds_bucket{le="2048.0"} 0.0',
            'volcano_e2e_job_scheduling_latency_milliseconds_bucket{le="4096.0"} 1.0',
            "volcano_e2e_job_scheduling_latency_milliseconds_sum 3000.0",
            'volcano_schedule_attempts_total{result="scheduled"} 2.0',
            'volcano_schedule_attempts_total{result="unschedulable"} 1.0',
            'volcano_schedule_attempts_total{result="error"} 0.0',
            "volcano_pod_preemption_victims 0.0",
            'volcano_unschedule_task_count{job_id="ns/big"} 1.0',
            "volcano_unschedule_job_count 1.0"):
        assert line in lines, line
    assert not [ln for ln in lines if 'action="session"' in ln]


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

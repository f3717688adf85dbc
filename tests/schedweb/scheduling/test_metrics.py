"""/metrics: Volcano's names and units, counters kept as running totals (a day of history costs the
scrape nothing, pruning moves no counter), the exposition checked by promtool when installed."""

from __future__ import annotations

import shutil
import subprocess
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from schedweb.core import services
from schedweb.core.job_services import job_submit
from schedweb.scheduling import cycle_metrics, metric_totals, metrics_body
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run, prune_history
from schedweb.scheduling.metrics import DEPRECATED_ALIASES, SchedulerCollector
from schedweb.scheduling.metrics_latency import ExactCounterFamily
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import CycleRun, MetricsBody, MetricTotal

from .conftest import SIMPLE_CONF, make_cluster, submit

pytestmark = pytest.mark.django_db

GPU = "nvidia.com/gpu"
# The names Volcano itself defines that promtool's lint flags (README, Metrics): latencies in
# milliseconds, the plugin histogram's `OnSession` label, gauges ending in _count.
UPSTREAM_LINT = {
    *(f"volcano_{n}_scheduling_latency_milliseconds" for n in ("e2e", "e2e_job", "action", "plugin", "task")),
    "volcano_open_session_duration_milliseconds", "volcano_scheduling_stage_duration_milliseconds",
    *(f"volcano_queue_pod_group_{phase}_count" for phase in ("inqueue", "pending", "running", "unknown",
                                                             "completed")),
    "volcano_unschedule_task_count", "volcano_unschedule_job_count",
    "volcano_total_preemption_attempts"}  # a counter without `_total`


@pytest.fixture
def gpu_cluster():
    """Queue q (capability 6 cpu, 2 GPUs) on two 4-cpu nodes with 2 GPUs each; job a (2 tasks of
    1 cpu + 1 GPU) bound by a cycle 3 s after its submission, job big (16 cpu) waiting."""
    services.queue_create(name="q", capability={"cpu": "6", GPU: "2"})
    for i in range(2):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi", GPU: 2, "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)
    job = job_submit(namespace="ns", name="a", queue="q", min_member=2, tasks=[
        {"name": f"a-{i}", "request": {"cpu": "1", "memory": "1Gi", GPU: 1}} for i in range(2)])
    submit("big", tasks=1, cpu="16")
    cycle_run(now=job.created + timedelta(seconds=3))
    agent_step(now=job.created + timedelta(seconds=3), period=2)


def scrape(client) -> str:
    return client.get("/metrics").content.decode()


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) -> value of an exposition."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_queue_metrics_under_volcano_names_with_gpus(client, gpu_cluster):
    lines = scrape(client).splitlines()
    for line in (
            'volcano_queue_allocated_milli_cpu{queue_name="q"} 2000.0',
            'volcano_queue_allocated_memory_bytes{queue_name="q"} 2.147483648e+09',
            'volcano_queue_allocated_scalar_resources{queue_name="q",resource="nvidia.com/gpu"} 2000.0',
            'volcano_queue_request_milli_cpu{queue_name="q"} 18000.0',
            'volcano_queue_capacity_milli_cpu{queue_name="q"} 6000.0',
            'volcano_queue_capacity_scalar_resources{queue_name="q",resource="nvidia.com/gpu"} 2000.0',
            'volcano_queue_inqueue_milli_cpu{queue_name="q"} 0.0',
            'volcano_queue_weight{queue_name="q"} 1.0',
            'volcano_queue_overused{queue_name="q"} 0.0',
            'volcano_queue_pod_group_inqueue_count{queue_name="q"} 2.0',
            'volcano_queue_pod_group_running_count{queue_name="q"} 0.0',
            # The previous release's name of the inqueue figures, same values, for one release.
            'schedweb_queue_inqueue_milli_cpu{queue_name="q"} 0.0',
            "# HELP schedweb_queue_inqueue_milli_cpu Deprecated: use volcano_queue_inqueue_milli_cpu. "
            "Inqueue CPU (milli cores) of the queue"):
        assert line in lines, line
    # No capability memory: unlimited, not 0.
    assert not [ln for ln in lines if ln.startswith("volcano_queue_capacity_memory_bytes{")]
    assert [ln for ln in lines if ln.startswith("volcano_queue_deserved_milli_cpu{")]
    # Names upstream never had are not under volcano_ (schedweb's own figures are schedweb_).
    for gone in ("volcano_queue_capability_", "volcano_queue_real_capability_", "volcano_queue_guarantee_",
                 "volcano_queue_elastic_", "_microseconds"):
        assert not [ln for ln in lines if gone in ln], gone
    assert [ln for ln in lines if ln.startswith("schedweb_queue_elastic_milli_cpu{")]
    assert DEPRECATED_ALIASES == {"schedweb_queue_inqueue_milli_cpu": "volcano_queue_inqueue_milli_cpu",
                                  "schedweb_queue_inqueue_memory_bytes": "volcano_queue_inqueue_memory_bytes"}


def test_a_cycle_adds_its_waits_attempts_and_timings(client, gpu_cluster):
    """The cycle 3 s after the submission bound a's two tasks: task and job waits of 3 s, one
    e2e latency, one observation per action and plugin callback of the session."""
    got = samples(scrape(client))
    for name, labels, value in (
            ("volcano_task_scheduling_latency_milliseconds_bucket", {"le": "2560.0"}, 0.0),
            ("volcano_task_scheduling_latency_milliseconds_bucket", {"le": "5120.0"}, 2.0),
            ("volcano_task_scheduling_latency_milliseconds_count", {}, 2.0),
            ("volcano_e2e_job_scheduling_latency_milliseconds_bucket", {"le": "2048.0"}, 0.0),
            ("volcano_e2e_job_scheduling_latency_milliseconds_bucket", {"le": "4096.0"}, 1.0),
            ("volcano_e2e_job_scheduling_latency_milliseconds_count", {}, 1.0),
            ("volcano_e2e_scheduling_latency_milliseconds_count", {}, 1.0),
            ("schedweb_cycle_duration_seconds_count", {}, 1.0),
            ("volcano_schedule_attempts_total", {"result": "scheduled"}, 2.0),
            ("volcano_schedule_attempts_total", {"result": "unschedulable"}, 1.0),
            ("volcano_schedule_attempts_total", {"result": "error"}, 0.0),
            ("schedweb_cycles_total", {"outcome": "ok"}, 1.0),
            ("schedweb_cycles_total", {"outcome": "skipped"}, 0.0),
            ("volcano_pod_preemption_victims", {}, 0.0),
            ("volcano_unschedule_task_count", {"job_id": "ns/big"}, 1.0),
            ("volcano_unschedule_job_count", {}, 1.0)):
        assert got[(name, frozenset(labels.items()))] == value, (name, labels)
    assert got[("volcano_e2e_job_scheduling_latency_milliseconds_sum", frozenset())] == pytest.approx(3000.0)
    for action in ("enqueue", "allocate", "backfill"):
        key = ("volcano_action_scheduling_latency_milliseconds_count", frozenset({("action", action)}))
        assert got[key] == 1.0, action
    plugins = {dict(labels)["plugin"] for name, labels in got
               if name == "volcano_plugin_scheduling_latency_milliseconds_count"}
    assert plugins == {"priority", "gang", "drf", "predicates", "proportion"}


def test_histograms_in_milliseconds_with_volcano_bounds(client, gpu_cluster):
    MetricTotal.objects.all().delete()
    timing = {"action_enqueue_s": 0.0004, "action_allocate_s": 0.003, "session_s": 0.004,
              "plugin_gang_open_s": 2e-05}
    cycle_metrics.record_cycle(CycleRun(duration_seconds=0.012, timing=timing, binds=2, pending_jobs=1))
    metrics_body.refresh()  # as the cycle that recorded these would, after its commit
    lines = scrape(client).splitlines()
    for line in (
            'volcano_e2e_scheduling_latency_milliseconds_bucket{le="10.0"} 0.0',
            'volcano_e2e_scheduling_latency_milliseconds_bucket{le="20.0"} 1.0',
            "volcano_e2e_scheduling_latency_milliseconds_sum 12.0",
            'volcano_action_scheduling_latency_milliseconds_bucket{action="allocate",le="1.0"} 0.0',
            'volcano_action_scheduling_latency_milliseconds_bucket{action="allocate",le="5.0"} 1.0',
            'volcano_action_scheduling_latency_milliseconds_sum{action="allocate"} 3.0',
            'volcano_action_scheduling_latency_milliseconds_bucket{action="enqueue",le="1.0"} 1.0',
            'volcano_action_scheduling_latency_milliseconds_count{action="enqueue"} 1.0',
            'volcano_plugin_scheduling_latency_milliseconds_bucket{OnSession="OnSessionOpen",le="0.01",'
            'plugin="gang"} 0.0',
            'volcano_plugin_scheduling_latency_milliseconds_bucket{OnSession="OnSessionOpen",le="0.1",'
            'plugin="gang"} 1.0',
            'volcano_plugin_scheduling_latency_milliseconds_bucket{OnSession="OnSessionOpen",le="2560.0",'
            'plugin="gang"} 1.0',
            'volcano_task_scheduling_latency_milliseconds_count 0.0',
            'volcano_schedule_attempts_total{result="scheduled"} 2.0'):
        assert line in lines, line
    assert not [ln for ln in lines if 'action="session"' in ln]


def test_totals_add_up_and_buckets_are_cumulative():
    totals = metric_totals.Totals()
    for value in (1.0, 5.0, 7.0, 100.0):
        totals.observe("h", (5.0, 10.0), value, {"x": "a"})
    totals.count("c", 2.0)
    totals.apply()
    metric_totals.add("c", 3.0)
    read = metric_totals.read()
    assert read["c"]['{}'][""] == 5.0
    parts = read["h"]['{"x":"a"}']
    assert parts == {"5.0": 2.0, "10.0": 1.0, "+Inf": 1.0, "sum": 113.0}
    assert metric_totals.histogram_samples(parts, (5.0, 10.0)) == (
        [("5.0", 2.0), ("10.0", 3.0), ("+Inf", 4.0)], 113.0)
    # A bound the code dropped since: its counts move up to the next bound, never down.
    assert metric_totals.histogram_samples(parts, (10.0,)) == ([("10.0", 3.0), ("+Inf", 4.0)], 113.0)


def insert_cycles(n: int, started) -> None:
    """`n` CycleRun rows at `started` in one statement (a recursive series: PostgreSQL and SQLite)."""
    table = CycleRun._meta.db_table
    at = connection.ops.adapt_datetimefield_value(started)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE series(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM series WHERE i < %s) "
            f"INSERT INTO {table} (started, skipped, load_seconds, schedule_seconds, write_seconds, "
            "duration_seconds, binds, pipelined, evictions, pending_jobs, conflicts, errors, warnings, "
            "rescheduling_ran, job_errors, agent_error, timing, pending_tasks, scores_recorded) "
            "SELECT %s, %s, 0.1, 0.2, 0.1, 0.4, 3, 0, 1, 2, 1, '', '[]', %s, 0, '', "
            """'{"action_allocate_s": 0.01}', 0, %s FROM series""",
            [n, at, False, False, False])


def counters(text: str) -> dict[tuple[str, frozenset], float]:
    """The counter and histogram samples of an exposition."""
    return {(s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text)
            if family.type in ("counter", "histogram") for s in family.samples}


def live(fn):
    """`fn()` with the stored body out of date: the scrape renders live."""
    MetricsBody.objects.update(rendered=timezone.now() - timedelta(days=1))
    return fn()


def test_a_day_of_history_costs_the_scrape_nothing_and_pruning_moves_no_counter(client):
    make_cluster(nodes=1)
    submit("a")
    submit("big", cpu="16")
    now = timezone.now()
    old = now - timedelta(days=2)
    for i in range(3):  # older than SCHEDULER_HISTORY_DAYS: pruned below
        cycle_run(now=old + timedelta(seconds=2 * i))
    cycle_run(now=now)
    with CaptureQueriesContext(connection) as served:
        before = counters(scrape(client))
    assert len(served.captured_queries) == 1  # the body the cycle rendered
    assert before[("schedweb_cycles_total", frozenset({("outcome", "ok")}))] == 4.0
    with CaptureQueriesContext(connection) as first:
        assert live(lambda: counters(scrape(client))) == before
    # A day of history at the default 2 s period, half of it prunable.
    insert_cycles(21_600, old)
    insert_cycles(21_600, now - timedelta(hours=1))
    with CaptureQueriesContext(connection) as day:
        after_day = live(lambda: counters(scrape(client)))
    # The row, then the collector's seven: none grows with the history.
    assert len(day.captured_queries) == len(first.captured_queries) == 1 + 7 + 1  # + live()'s update
    assert after_day == before  # counted by the cycles that ran, not by the rows kept
    assert metrics_body.refresh()
    with CaptureQueriesContext(connection) as served:
        assert counters(scrape(client)) == before
    assert len(served.captured_queries) == 1
    assert prune_history(now) >= 21_603
    metrics_body.refresh()
    assert counters(scrape(client)) == before
    cycle_run(now=now + timedelta(seconds=2))
    grown = counters(scrape(client))
    assert all(grown[key] >= value for key, value in before.items())
    assert grown[("schedweb_cycles_total", frozenset({("outcome", "ok")}))] == 5.0


def test_every_web_process_exports_the_same_totals(gpu_cluster):
    """Two registries (two web workers, or one restarted) read the same running totals."""
    texts = []
    for _ in range(2):
        registry = CollectorRegistry(auto_describe=True)
        registry.register(SchedulerCollector())
        texts.append(counters(generate_latest(registry).decode()))
    assert texts[0] == texts[1] and texts[0][("schedweb_cycles_total", frozenset({("outcome", "ok")}))] == 1.0


class Collected:
    """Families collected once, for generate_latest (a scrape's gauges move between two reads)."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self) -> list:
        return self.families


def test_the_exposition_is_prometheus_clients_byte_for_byte(gpu_cluster):
    """But for counters upstream names without `_total`, written as Go's client writes them."""
    families = list(SchedulerCollector().collect())
    exact = [f for f in families if isinstance(f, ExactCounterFamily)]
    others = [f for f in families if not isinstance(f, ExactCounterFamily)]
    assert exposition(others) == generate_latest(Collected(others))
    assert [f.name for f in exact] == ["volcano_total_preemption_attempts"]
    assert exposition(exact).decode() == (
        "# HELP volcano_total_preemption_attempts Total preemption attempts in the cluster till now\n"
        "# TYPE volcano_total_preemption_attempts counter\n"
        "volcano_total_preemption_attempts 0.0\n")


def test_label_values_and_help_are_escaped():
    family = GaugeMetricFamily("g", "help \\ with\nnewline", labels=["l"])
    family.add_metric(['a "quoted" \\ value\n'], 1.0)
    assert exposition([family]) == generate_latest(Collected([family]))
    assert exposition([family]).decode().splitlines()[-1] == 'g{l="a \\"quoted\\" \\\\ value\\n"} 1.0'


def test_collector_registration_runs_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        CollectorRegistry(auto_describe=True).register(SchedulerCollector())


def test_metrics_endpoint(client):
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=2, cpu="1")
    submit("big", tasks=1, cpu="16")
    cycle_run()
    text = scrape(client)
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


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus)")
def test_promtool_finds_nothing_but_upstream_names(client, gpu_cluster):
    result = subprocess.run(["promtool", "check", "metrics"], input=scrape(client), capture_output=True,
                            text=True, timeout=60)
    problems = [ln for ln in (result.stdout + result.stderr).splitlines() if ln.strip()]
    flagged = {p.split(" ", 1)[0] for p in problems}
    assert sorted(flagged - UPSTREAM_LINT) == []
    assert "volcano_plugin_scheduling_latency_milliseconds" in flagged  # the lint did run

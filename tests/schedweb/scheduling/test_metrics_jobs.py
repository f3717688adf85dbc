"""Volcano's per-job gauges (job share, e2e job scheduling times) and the preemption attempts in
/metrics after controlled cycles: exact values, the series cap, a finished job's series gone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_cancel, job_delete, job_submit, task_set_status
from schedweb.core.models import Job
from schedweb.scheduling import incremental, metrics_jobs
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics_latency import PREEMPTION_ATTEMPTS
from schedweb.scheduling.models import MetricsBody

from .conftest import SIMPLE_CONF, make_cluster, submit
from .test_metrics import samples, scrape

pytestmark = pytest.mark.django_db

E2E = ("duration", "start_time", "last_time")


def at(value: float) -> object:
    """Equal to a time (unix seconds) or duration (ms) within a millisecond: pytest.approx's relative
    default would let a unix time be off by half an hour."""
    return pytest.approx(value, abs=1e-3)


def _job(name: str, cpu: str, memory: str, tasks: int = 1) -> Job:
    return job_submit(namespace="ns", name=name, queue="q", min_member=tasks,
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": memory}}
                             for i in range(tasks)])


def _e2e(got: dict, job: str, queue: str = "q") -> dict[str, float]:
    labels = frozenset({("job_name", job), ("queue", queue), ("job_namespace", "ns")})
    return {part: got[key] for part in E2E
            if (key := (f"volcano_e2e_job_scheduling_{part}", labels)) in got}


def _share(got: dict, job: str) -> float | None:
    return got.get(("volcano_job_share", frozenset({("job_ns", "ns"), ("job_id", job)})))


def _jobs_with_series(got: dict) -> set[str]:
    return {dict(labels).get("job_name") or dict(labels)["job_id"] for name, labels in got
            if name == "volcano_job_share" or name.startswith("volcano_e2e_job_scheduling_")
            and not name.startswith("volcano_e2e_job_scheduling_latency")}


@pytest.fixture
def three_jobs():
    """Two nodes of 4 cpu / 8Gi (8 cpu, 16Gi in all). a: 2 x (1 cpu, 1Gi), b: 1 cpu / 6Gi, both
    bound by the first cycle 3 s after b's submission; big (16 cpu) waits."""
    make_cluster(nodes=2, cpu="4")
    a = _job("a", "1", "1Gi", tasks=2)
    b = _job("b", "1", "6Gi")
    big = _job("big", "16", "1Gi")
    first = b.created + timedelta(seconds=3)
    cycle_run(now=first)
    return {"a": a, "b": b, "big": big, "first": first}


def test_drf_shares_and_e2e_gauges_of_each_job(client, three_jobs):
    got = samples(scrape(client))
    # Dominant shares: a 2/8 cpu = 0.25 (memory 2/16); b 6/16 memory = 0.375; big nothing: 0.
    assert _share(got, "a") == pytest.approx(0.25)
    assert _share(got, "b") == pytest.approx(0.375)
    assert _share(got, "big") == 0.0
    first = three_jobs["first"].timestamp()
    for name in ("a", "b"):
        created = three_jobs[name].created.timestamp()
        assert _e2e(got, name) == {"start_time": at(first), "last_time": at(first),
                                   "duration": at((first - created) * 1e3)}, name
    assert _e2e(got, "b")["duration"] == at(3000.0)
    # Never bound: only the start of its scheduling (Volcano sets the others with an allocation).
    assert _e2e(got, "big") == {"start_time": at(first)}


def test_start_stays_the_first_cycle_last_moves_with_new_binds(client, three_jobs):
    first = three_jobs["first"]
    late = submit("late", tasks=1, cpu="1")
    second = first + timedelta(seconds=10)
    cycle_run(now=second)
    got = samples(scrape(client))
    assert _e2e(got, "a")["start_time"] == at(first.timestamp())
    assert _e2e(got, "a")["last_time"] == at(first.timestamp())  # nothing bound since
    assert _e2e(got, "late") == {"start_time": at(second.timestamp()),
                                 "last_time": at(second.timestamp()),
                                 "duration": at((second - late.created).total_seconds() * 1e3)}


def test_a_finished_cancelled_or_deleted_jobs_series_go_with_the_next_cycle(client, three_jobs):
    assert _jobs_with_series(samples(scrape(client))) == {"a", "b", "big"}
    agent_step(now=three_jobs["first"], period=2)  # a's and b's tasks run
    job_cancel(job=three_jobs["b"])
    job_cancel(job=three_jobs["big"])
    job_delete(job=Job.objects.get(pk=three_jobs["big"].pk))
    for task in three_jobs["a"].tasks.all():
        task_set_status(task=task, status="Succeeded")
    # The test's one transaction hides these changes from the incremental loader: a full load.
    incremental.forget()
    cycle_run(now=three_jobs["first"] + timedelta(seconds=5))
    got = samples(scrape(client))
    assert _jobs_with_series(got) == set()
    # The families stay (empty), as upstream's do.
    assert "# TYPE volcano_job_share gauge" in scrape(client)


def test_a_job_submitted_again_under_its_name_between_cycles_starts_afresh(client, three_jobs):
    """big (never bound) is cancelled, deleted and submitted again before the next cycle: it is
    another job, whose scheduling starts at that cycle, not at the first one."""
    job_cancel(job=three_jobs["big"])
    job_delete(job=Job.objects.get(pk=three_jobs["big"].pk))
    _job("big", "16", "1Gi")
    incremental.forget()  # the test's one transaction hides the changes from the change log
    second = three_jobs["first"] + timedelta(seconds=5)
    cycle_run(now=second)
    assert _e2e(samples(scrape(client)), "big") == {"start_time": at(second.timestamp())}


def test_series_are_capped_newest_jobs_first(client, settings):
    settings.METRICS_JOB_SERIES_MAX = 2
    make_cluster(nodes=1, cpu="4")
    for name in ("j0", "j1", "j2", "j3"):
        submit(name, tasks=1, cpu="16")
    cycle_run()
    got = samples(scrape(client))
    assert _jobs_with_series(got) == {"j2", "j3"}
    settings.METRICS_JOB_SERIES_MAX = 0
    cycle_run()
    assert _jobs_with_series(samples(scrape(client))) == set()


def test_a_live_render_in_another_process_has_the_families_without_samples(client, three_jobs):
    metrics_jobs.SERIES.cycle_id = -1  # as in a web process that ran no cycle
    MetricsBody.objects.update(rendered=timezone.now() - timedelta(hours=1))  # stale: a live render
    text = client.get("/metrics").content.decode()
    assert "# TYPE volcano_e2e_job_scheduling_duration gauge" in text
    assert _jobs_with_series(samples(text)) == set()


PREEMPT_CONF = SIMPLE_CONF.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, preempt"')


def test_preemption_attempts_are_counted_and_kept(client):
    """One node of 4 cpu: low's four running 1-cpu tasks (gang gives up the three above its
    min_member of 1); high (3 cpu) preempts on the only node: one attempt, three evictions (the
    queue's deserved 4 cpu holds high only once low is down to 1). A second cycle, with high
    pipelined and its victims releasing, adds no attempt."""
    make_cluster(nodes=1, cpu="4")
    services.scheduler_config_activate(yaml=PREEMPT_CONF)
    services.priority_class_create(name="high", value=100)
    services.priority_class_create(name="low", value=1)
    job_submit(namespace="ns", name="low", queue="q", priority_class="low",
               tasks=[{"name": f"low-{i}", "request": {"cpu": "1", "memory": "1Gi"}} for i in range(4)])
    cycle_run()
    agent_step()
    name = PREEMPTION_ATTEMPTS.name  # upstream's name, a counter without `_total`, as Go writes it
    assert f"# TYPE {name} counter\n{name} 0.0\n" in scrape(client)
    job_submit(namespace="ns", name="high", queue="q", priority_class="high",
               tasks=[{"name": "high-0", "request": {"cpu": "3", "memory": "1Gi"}}])
    cycle_run()
    text = scrape(client)
    assert attempts(text) == 1.0
    assert samples(text)[("volcano_eviction_transactions_total", frozenset())] == 3.0
    cycle_run()
    assert attempts(scrape(client)) == 1.0


def attempts(text: str) -> float:
    """The counter's value (prometheus_client's parser would add `_total` to its name)."""
    [value] = [float(ln.split()[1]) for ln in text.splitlines()
               if ln.startswith(PREEMPTION_ATTEMPTS.name + " ")]
    return value


def test_unscheduled_task_counts_are_capped_alike(client, settings):
    settings.METRICS_JOB_SERIES_MAX = 2
    make_cluster(nodes=1, cpu="4")
    for name in ("j0", "j1", "j2"):
        submit(name, tasks=2, cpu="16")
    cycle_run()
    got = samples(scrape(client))
    assert {dict(labels)["job_id"]: value for (name, labels), value in got.items()
            if name == "volcano_unschedule_task_count"} == {"ns/j1": 2.0, "ns/j2": 2.0}
    assert got[("volcano_unschedule_job_count", frozenset())] == 3.0  # the count is not capped


def test_a_series_line_is_kept_only_while_its_value_holds():
    from prometheus_client.core import GaugeMetricFamily

    from schedweb.scheduling.metrics_jobs import JobRow, families
    from schedweb.scheduling.metrics_text import exposition

    def text(rows):
        return exposition(families(rows)).decode()

    def reference(rows):  # the same series as plain gauges, written sample by sample
        out = []
        for family in families(rows):
            plain = GaugeMetricFamily(family.name, family.documentation, labels=list(family.label_names))
            for values, value in family.points:
                plain.add_metric(list(values), value)
            out.append(plain)
        return exposition(out).decode()

    first = [JobRow("ns", "a", "q", 0.25, 100.0, 160.0, 60000.0),
             JobRow("ns", "b", "q", 0.0, 50.0, None, None)]
    assert text(first) == reference(first)
    moved = [JobRow("ns", "a", "q", 0.5, 100.0, 170.0, 70000.0),
             JobRow("ns", "b", "q", -0.0, 50.0, None, None)]
    assert text(moved) == reference(moved)
    assert 'volcano_job_share{job_id="a",job_ns="ns"} 0.5\n' in text(moved)
    assert 'volcano_job_share{job_id="b",job_ns="ns"} -0.0\n' in text(moved)
    assert text(first) == reference(first)


def test_the_series_text_is_the_families_exposition_and_follows_the_row_objects():
    from schedweb.scheduling.metrics_jobs import JobRow, families, families_text
    from schedweb.scheduling.metrics_text import exposition

    rows = [JobRow("ns", 'a"b', "q", 0.25, 100.0, 160.0, 60000.0),
            JobRow("ns", "b", "q\\x", None, 50.0, None, None)]
    assert families_text(rows) == exposition(families(rows)).decode()
    assert families_text([]) == exposition(families([])).decode()
    signed = [JobRow("ns", 'a"b', "q", -0.0, 100.0, 160.0, 60000.0), rows[1]]  # equal, other text
    assert families_text(signed) == exposition(families(signed)).decode()
    assert 'volcano_job_share{job_id="a\\"b",job_ns="ns"} -0.0\n' in families_text(signed)

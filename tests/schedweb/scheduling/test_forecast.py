"""The forecast task (issue 20): estimated starts stored per waiting job, off the scheduling path."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_submit
from schedweb.core.models import Job, JobPhase, Task, TaskStatus
from schedweb.scheduling import forecast_task, tasks
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.forecast_task import after_cycle, due, queue_runtime_estimates, run_forecast
from schedweb.scheduling.models import CycleRun, ForecastRun, JobForecast

pytestmark = pytest.mark.django_db


def _job(name: str, queue: str, durations: list[float | None], cpu: str = "2", min_member: int | None = None):
    return job_submit(namespace="ns", name=name, queue=queue, min_member=min_member or len(durations),
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": "1Gi"}, "duration": d}
                             for i, d in enumerate(durations)])


def _two_queues() -> None:
    """q1 and q2 (no deserved: the shipped hierarchical capacity conf), two 4-cpu nodes."""
    services.queue_create(name="q1")
    services.queue_create(name="q2")
    for name in ("n0", "n1"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})


def _started(t0, name: str, queue: str, durations: list[float | None]) -> Job:
    """A job of 2-cpu tasks bound by a cycle at t0 and Running from t0 (the simulated agent)."""
    job = _job(name, queue, durations)
    assert cycle_run(now=t0).binds == len(durations)
    agent_step(now=t0)
    assert set(Task.objects.filter(job=job).values_list("status", "started")) == {(TaskStatus.RUNNING, t0)}
    return job


def test_two_queues_the_waiting_gang_starts_when_the_declared_durations_end():
    # q1 runs `long` (4 x 2 cpu: the whole cluster) from t0; two of its tasks end at t0+300,
    # two at t0+900. Waiting: `small` (q1, 2 x 2 cpu, 1000 s) and the gang (q2, 4 x 2 cpu).
    # Forecast at t0+100, period 2 s: at t0+300 4 cpu free up: small starts (the gang needs
    # 8); at t0+900 4 more, but small holds the other 4 until t0+300+1000: the gang starts
    # at t0+1300, on the cycle grid (t0+100 + 600 x 2 s).
    _two_queues()
    t0 = timezone.now().replace(microsecond=0)
    _started(t0, "long", "q1", [300, 300, 900, 900])
    small = _job("small", "q1", [1000, 1000])
    gang = _job("gang", "q2", [600] * 4)
    now = t0 + timedelta(seconds=100)
    run = run_forecast(now=now)
    assert (run.errors, run.jobs, run.stop, run.until) == ("", 2, "answered", t0 + timedelta(seconds=1300))
    rows = {r.job_id: (r.estimated_start, r.estimate_basis, r.computed_at, r.until)
            for r in JobForecast.objects.all()}
    until = t0 + timedelta(seconds=1300)
    assert rows == {small.pk: (t0 + timedelta(seconds=300), "declared", now, until),
                    gang.pk: (t0 + timedelta(seconds=1300), "declared", now, until)}
    assert list(ForecastRun.objects.values_list("pk", flat=True)) == [run.pk]


def test_each_run_replaces_the_rows_and_a_job_without_duration_makes_the_rest_unknown():
    _two_queues()
    t0 = timezone.now().replace(microsecond=0)
    _started(t0, "long", "q1", [None, None, None, None])  # no declared end, no history
    gang = _job("gang", "q2", [600] * 4)
    run_forecast(now=t0 + timedelta(seconds=10))
    second = run_forecast(now=t0 + timedelta(seconds=20))
    rows = list(JobForecast.objects.values_list("job_id", "estimated_start", "estimate_basis", "computed_at"))
    assert rows == [(gang.pk, None, "unknown", t0 + timedelta(seconds=20))]
    assert (second.stop, second.jobs) == ("quiet", 1)
    assert ForecastRun.objects.count() == 2
    # A run older than the stored one stores nothing (two runs finishing out of order).
    stale = run_forecast(now=t0 + timedelta(seconds=15))
    assert stale.pk is None and JobForecast.objects.get().computed_at == t0 + timedelta(seconds=20)


def _finished(name: str, queue: str, runtimes: list[float], end) -> None:
    """A Completed job whose Succeeded tasks ran `runtimes` seconds, ending at `end`."""
    job = _job(name, queue, [None] * len(runtimes), cpu="1")
    for task, runtime in zip(job.tasks.order_by("name"), runtimes, strict=True):
        Task.objects.filter(pk=task.pk).update(status=TaskStatus.SUCCEEDED, finished=end,
                                               started=end - timedelta(seconds=runtime))
    Job.objects.filter(pk=job.pk).update(phase=JobPhase.COMPLETED, finished=end)


def test_queue_runtime_is_the_median_of_its_newest_finished_tasks(settings):
    services.queue_create(name="q1")
    services.queue_create(name="q2")
    now = timezone.now()
    _finished("old", "q1", [5000], now - timedelta(hours=2))
    _finished("a", "q1", [100, 200, 600], now - timedelta(minutes=5))
    _finished("b", "q2", [30, 50], now - timedelta(minutes=1))
    _finished("ancient", "q2", [9999], now - timedelta(days=8))  # outside the window
    running = _job("running", "q2", [None], cpu="1")  # not finished: not counted
    Task.objects.filter(job=running).update(status=TaskStatus.SUCCEEDED, started=now - timedelta(hours=1),
                                            finished=now)
    assert queue_runtime_estimates(now) == {"q1": 400.0, "q2": 40.0}  # q1: 100, 200, 600, 5000
    assert queue_runtime_estimates(now, limit=3) == {"q1": 200.0, "q2": 40.0}  # the newest three
    settings.FORECAST_HISTORY_TASKS = 1
    # Tasks that finished together: the newest row first (a-2 ran 600 s, b-1 50 s).
    assert queue_runtime_estimates(now) == {"q1": 600.0, "q2": 50.0}
    assert queue_runtime_estimates(now, limit=0) == {}


def test_a_running_task_without_duration_ends_after_its_queue_median():
    # q1's finished tasks ran 100, 200 and 600 s: median 200. `long` (no duration) started at
    # t0 holds the cluster; the gang starts when it ends: t0+200, basis "history".
    _two_queues()
    t0 = timezone.now().replace(microsecond=0)
    _finished("done", "q1", [100, 200, 600], t0 - timedelta(minutes=1))
    _started(t0, "long", "q1", [None] * 4)
    gang = _job("gang", "q2", [600] * 4)
    run_forecast(now=t0)
    row = JobForecast.objects.get()
    assert (row.job_id, row.estimated_start, row.estimate_basis) == (gang.pk, t0 + timedelta(seconds=200),
                                                                     "history")


def test_a_failing_forecast_is_recorded_not_raised(monkeypatch):
    monkeypatch.setattr(forecast_task, "load_state", lambda now: 1 / 0)
    run = run_forecast()
    assert run.errors == "ZeroDivisionError: division by zero"
    assert ForecastRun.objects.get().errors == run.errors and not JobForecast.objects.exists()


@pytest.mark.parametrize("every,cycle,expected", [
    (15, 15, True), (15, 30, True), (15, 14, False), (15, None, False), (0, 15, False), (1, 7, True)])
def test_forecast_is_due_every_k_cycles(settings, every, cycle, expected):
    settings.FORECAST_EVERY_CYCLES = every
    assert due(cycle) is expected


class _Sent:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[dict] = []
        self.fail = fail

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if self.fail:
            raise ConnectionError("broker down")


def test_the_cycle_task_sends_the_forecast_to_the_default_queue(monkeypatch, settings):
    settings.FORECAST_EVERY_CYCLES, settings.SCHEDULE_PERIOD = 3, 2.0
    sent = _Sent()
    monkeypatch.setattr(forecast_task.forecast_jobs, "apply_async", sent)
    summaries = iter([{"cycle": 2, "skipped": False, "errors": ""},
                      {"cycle": 3, "skipped": False, "errors": ""},
                      {"cycle": 6, "skipped": True, "errors": ""},
                      {"cycle": 9, "skipped": False, "errors": "x"}])
    monkeypatch.setattr(tasks, "cycle_and_agent", lambda shard="": dict(next(summaries)))
    outs = [tasks.scheduling_cycle() for _ in range(4)]
    assert [o.get("forecast") for o in outs] == [None, "sent", None, None]
    assert sent.calls == [{"queue": "celery", "expires": 6.0, "retry": False}]
    failing = _Sent(fail=True)
    monkeypatch.setattr(forecast_task.forecast_jobs, "apply_async", failing)
    assert after_cycle({"cycle": 3, "skipped": False, "errors": ""}, inline=False) == "not sent"
    assert not ForecastRun.objects.exists()  # never run in the cycle's worker


def test_run_scheduler_runs_the_forecast_in_process_after_a_due_cycle(settings):
    _two_queues()
    _job("gang", "q2", [600] * 4)
    _job("huge", "q2", [60], cpu="9")  # fits no node: never
    settings.FORECAST_EVERY_CYCLES = 1
    call_command("run_scheduler", "--once")
    run = ForecastRun.objects.get()
    assert (run.errors, run.jobs) == ("", 1)
    cycle = CycleRun.objects.get()
    assert run.computed_at >= cycle.started
    row = JobForecast.objects.get()
    assert (row.job.name, row.estimate_basis) == ("huge", "never")  # the gang was bound by the cycle


def test_manage_forecast_runs_once(capsys):
    _two_queues()
    _job("huge", "q2", [60], cpu="9")
    call_command("forecast")
    out = capsys.readouterr().out
    run = ForecastRun.objects.get()
    assert out.startswith(f"forecast {run.pk}: 1 waiting job(s), 1 cycle(s) simulated until ")
    assert "(stopped: answered)" in out
    assert JobForecast.objects.get().estimate_basis == "never"


def _sharded(settings) -> None:
    """Two 4-cpu nodes, each its own hard shard: n0 is shard a's (scheduler sched-a), n1 shard b's."""
    from schedweb.core.models import NodeShard

    services.queue_create(name="q")
    for name in ("n0", "n1"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="hard", nodes_desired=["n0"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="hard", nodes_desired=["n1"])
    settings.SCHEDULER_SHARDS = ["a", "b"]


def _routed(name: str, scheduler: str, durations: list[float | None]) -> Job:
    tasks = [{"name": f"{name}-{i}", "request": {"cpu": "4", "memory": "1Gi"}, "duration": d}
             for i, d in enumerate(durations)]
    return job_submit(namespace="ns", name=name, queue="q", min_member=len(durations),
                      scheduler_name=scheduler, tasks=tasks)


def test_a_sharded_forecast_runs_each_instance_on_its_own_nodes(settings):
    # Shard a's `long` holds n0 until t0+300. Waiting: `ja` (shard a's) and `jb` (shard b's), 4 cpu
    # each. Unsharded, ja (older) would take n1 now; each instance places only its own jobs on
    # its own nodes: jb takes n1 at once, ja waits for n0.
    _sharded(settings)
    t0 = timezone.now().replace(microsecond=0)
    _routed("long", "sched-a", [300])
    assert cycle_run(now=t0, shard="a").binds == 1
    agent_step(now=t0)
    ja = _routed("ja", "sched-a", [600])
    jb = _routed("jb", "sched-b", [600])
    now = t0 + timedelta(seconds=100)
    run = run_forecast(now=now)
    assert run.errors == ""
    rows = dict(JobForecast.objects.values_list("job_id", "estimated_start"))
    assert rows == {ja.pk: t0 + timedelta(seconds=300), jb.pk: now}


def test_without_an_instance_for_a_shard_its_jobs_never_start(settings):
    _sharded(settings)
    settings.SCHEDULER_SHARDS = ["b"]  # nobody cycles shard a
    ja = _routed("ja", "sched-a", [600])
    jb = _routed("jb", "sched-b", [600])
    now = timezone.now().replace(microsecond=0)
    run_forecast(now=now)
    rows = {pk: (start, basis) for pk, start, basis in
            JobForecast.objects.values_list("job_id", "estimated_start", "estimate_basis")}
    assert rows[jb.pk] == (now, "declared")
    assert rows[ja.pk][0] is None

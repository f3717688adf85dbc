"""The body rendered after each cycle from kept counts (metrics_counts, metrics_queues, the per-job
series of metrics_jobs) is byte for byte a fresh render over the tables, whoever wrote them:
seeded mixes of cycles, agent steps and API-style writes (submits, cancels, suspends, deletes,
completions, queue creates, renames and deletes), and jobs made to share a creation time, on
real PostgreSQL with committed transactions."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import (
    job_cancel,
    job_delete,
    job_resume,
    job_submit,
    job_suspend,
    task_set_status,
)
from schedweb.core.models import (
    NODE_BOUND_TASK_STATUSES,
    TERMINAL_JOB_PHASES,
    Job,
    JobPhase,
    Queue,
    Task,
    TaskStatus,
)
from schedweb.scheduling import (
    cycle_metrics,
    incremental,
    metrics,
    metrics_body,
    metrics_counts,
    metrics_jobs,
)
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import MetricsBody

from .conftest import make_cluster, requires_postgres

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


def live_text() -> str:
    """Every family but the age, through prometheus_client's families and the generic writer:
    the counts queried afresh, the queue lines written sample by sample."""
    families, _ = metrics.collect_families(None)
    return exposition(f for f in families if f.name != metrics.LAST_CYCLE_AGE).decode()


def stored() -> str:
    return MetricsBody.objects.get(pk=metrics_body.body_key("")).body


@pytest.fixture
def fresh(monkeypatch):
    """No counts or series carried in from another test; every cycle's per-job series checked
    against a twin that walks every job each cycle (the former way)."""
    metrics_counts.forget()
    incremental.forget()
    metrics_jobs.SERIES.__init__()
    twin = metrics_jobs.JobSeries()
    real = cycle_metrics.record_session
    checked = []

    def record_and_compare(run, state, result, applied, now):
        real(run, state, result, applied, now)
        bound = cycle_metrics.bound_jobs(state, result, applied)
        twin.record(run.pk, state.snapshot.jobs, cycle_metrics.scheduled(state, result), result, bound,
                    now.timestamp(), context=object())  # never the same context: a walk
        assert metrics_jobs.SERIES.rows == twin.rows
        checked.append(run.pk)

    monkeypatch.setattr(cycle_metrics, "record_session", record_and_compare)
    yield checked
    metrics_counts.forget()


class Writes:
    """API-style writes chosen by a seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.made = rng, 0

    def pick(self, rows):
        rows = list(rows.order_by("id"))
        return self.rng.choice(rows) if rows else None

    def submit(self) -> None:
        self.made += 1
        queue = self.pick(Queue.objects.exclude(name="root").filter(children__isnull=True))
        tasks = self.rng.randint(1, 3)
        cpu = self.rng.choice(["1", "1", "2", "16"])  # 16: never fits, waits with a reason
        job_submit(namespace=self.rng.choice(["ns", "ns-b"]), name=f"j{self.made}", queue=queue.name,
                   min_member=tasks, tasks=[{"name": f"t{i}", "request": {"cpu": cpu, "memory": "1Gi"},
                                             "duration": self.rng.choice([None, 1.0])} for i in range(tasks)])

    def cancel(self) -> None:
        if job := self.pick(Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES)):
            job_cancel(job=job)

    def suspend_or_resume(self) -> None:
        if job := self.pick(Job.objects.filter(phase=JobPhase.ABORTED)):
            job_resume(job=job)
        elif job := self.pick(Job.objects.exclude(phase__in=(*TERMINAL_JOB_PHASES, JobPhase.ABORTED))):
            job_suspend(job=job)

    def delete(self) -> None:
        done = Job.objects.filter(phase__in=TERMINAL_JOB_PHASES)
        if job := self.pick(done.exclude(tasks__status__in=NODE_BOUND_TASK_STATUSES).distinct()):
            job_delete(job=job)

    def complete(self) -> None:
        if task := self.pick(Task.objects.filter(status=TaskStatus.RUNNING)):
            task_set_status(task=task, status=TaskStatus.SUCCEEDED)

    def phase_and_reason(self) -> None:
        """A writer outside the services (an operator's SQL): phase and reason code moved."""
        if job := self.pick(Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES)):
            Job.objects.filter(pk=job.pk).update(
                phase=self.rng.choice([JobPhase.PENDING, JobPhase.INQUEUE, JobPhase.UNKNOWN]),
                reason_code=self.rng.choice(["", "Unschedulable", "QueueOverCapability", "Zeta"]))

    def queue(self) -> None:
        name = f"extra{self.made}"
        self.made += 1
        extra = Queue.objects.filter(name__startswith="extra")
        empty = self.pick(extra.filter(jobs__isnull=True, children__isnull=True))
        if empty is not None and self.rng.random() < 0.5:
            if self.rng.random() < 0.5:
                services.queue_update(queue=empty, name=f"{empty.name}-renamed{self.made}")
            else:
                services.queue_delete(queue=empty)
        else:
            services.queue_create(name=name, parent=self.rng.choice([None, "parent"]))


# Not same_creation: a creation time moved by hand reaches the per-job series late (metrics_jobs).
STEPS = ("submit", "submit", "cancel", "suspend_or_resume", "delete", "complete", "phase_and_reason", "queue")


@pytest.mark.parametrize("seed", [1, 2])
def test_the_body_after_cycles_and_outside_writes_is_a_fresh_render(fresh, settings, seed):
    settings.METRICS_JOB_SERIES_MAX = 4  # the newest-first cut falls among the jobs
    settings.METRICS_RECOUNT_EVERY = 7  # the periodic count from scratch runs too
    rng = random.Random(seed)
    make_cluster(nodes=3, cpu="4")
    services.queue_create(name="parent")
    services.queue_create(name="leaf", parent="parent")
    writes = Writes(rng)
    for _ in range(4):
        writes.submit()
    now = timezone.now()
    for step in range(40):
        now += timedelta(seconds=2)
        if step % 3 == 0:
            run = cycle_run(now=now)
            assert not run.errors, run.errors
            assert stored() == live_text(), f"after the cycle of step {step}"
            agent_step(now=now, period=2)
        else:
            for _ in range(rng.randint(1, 3)):
                getattr(writes, rng.choice(STEPS))()
            assert metrics_body.refresh()  # the render another write's caller does
            assert stored() == live_text(), f"after the writes of step {step}"
    assert len(fresh) >= 10  # every cycle's series were compared with the walking twin
    assert Job.objects.filter(reason_code__gt="").exists()


def test_a_render_inside_a_transaction_keeps_nothing(fresh):
    make_cluster(nodes=1)
    job_submit(namespace="ns", name="a", queue="q", tasks=[{"name": "t", "request": {"cpu": "16"}}])
    cycle_run()
    kept = metrics_counts.current()
    assert metrics_counts.current() is kept  # kept from one render to the next
    with pytest.raises(RuntimeError), transaction.atomic():
        job_submit(namespace="ns", name="b", queue="q", tasks=[{"name": "t", "request": {"cpu": "16"}}])
        assert metrics_counts.current() is not kept  # counted afresh, not kept
        assert sum(kept.waiting.values()) == 1
        raise RuntimeError("roll back")
    assert metrics_counts.current() is kept and sum(kept.waiting.values()) == 1
    assert metrics_body.refresh() and stored() == live_text()


def test_a_log_that_went_back_is_counted_afresh(fresh):
    make_cluster(nodes=1)
    job_submit(namespace="ns", name="a", queue="q", tasks=[{"name": "t", "request": {"cpu": "16"}}])
    cycle_run()
    kept = metrics_counts.current()
    Task.objects.update(updated=F("updated"))  # rows named by the log, nothing moved
    assert metrics_counts.current() is kept
    kept.position = replace(kept.position, newest=kept.position.newest + 10**6)  # as if rolled back
    assert metrics_counts.current() is not kept
    assert metrics_body.refresh() and stored() == live_text()


def test_jobs_created_at_once_are_cut_as_the_database_orders_their_names(fresh, settings):
    """The newest-first cut falls inside a group of jobs sharing their creation time: the kept
    order asks the database for that group's order, as UNSCHEDULED_SQL's ORDER BY has it."""
    settings.METRICS_JOB_SERIES_MAX = 3
    make_cluster(nodes=1)
    for name in ("b", "a-c", "ab", "z", "a.b", "b0"):
        job_submit(namespace="ns", name=name, queue="q", tasks=[{"name": "t", "request": {"cpu": "16"}}])
    cycle_run()  # they wait, each with a reason
    Job.objects.update(created=Job.objects.order_by("id").first().created)
    assert metrics_body.refresh() and stored() == live_text()
    got = [line for line in stored().splitlines() if line.startswith("volcano_unschedule_task_count{")]
    assert len(got) == 3


def test_the_kept_counts_never_warn_of_a_difference(fresh, settings, caplog):
    settings.METRICS_RECOUNT_EVERY = 2
    make_cluster(nodes=2)
    services.queue_create(name="parent")
    services.queue_create(name="leaf", parent="parent")
    rng = random.Random(7)
    writes = Writes(rng)
    now = timezone.now()
    for step in range(12):
        writes.submit()
        getattr(writes, STEPS[step % len(STEPS)])()
        now += timedelta(seconds=2)
        cycle_run(now=now)
        agent_step(now=now, period=2)
    assert not [r for r in caplog.records if r.name.startswith("schedweb.scheduling.metrics")]
    assert metrics_body.refresh() and stored() == live_text()


def test_a_shown_jobs_creation_moved_by_hand_is_seen_at_the_next_cycle(fresh, settings):
    settings.METRICS_JOB_SERIES_MAX = 2
    make_cluster(nodes=1)
    for name in ("a", "b", "c"):
        job_submit(namespace="ns", name=name, queue="q", tasks=[{"name": "t", "request": {"cpu": "16"}}])
    cycle_run()
    assert [r.name for r in metrics_jobs.SERIES.rows] == ["c", "b"]
    Job.objects.filter(name="b").update(created=F("created") - timedelta(hours=1))
    cycle_run()  # the fixture compares the series with a walk of every job
    assert [r.name for r in metrics_jobs.SERIES.rows] == ["c", "a"] and len(fresh) == 2

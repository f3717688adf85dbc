"""cycle_run(): binds, reasons and their history, queue samples, CycleRun figures, skip on lock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, JobPhase, Task
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun, JobReasonHistory, QueueSample

from .conftest import SIMPLE_CONF, make_cluster, statuses, submit

pytestmark = pytest.mark.django_db


def test_gang_binds_and_cycle_figures():
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=3, cpu="2")
    run = cycle_run()
    assert (run.skipped, run.binds, run.pipelined, run.evictions, run.pending_jobs, run.conflicts,
            run.errors) == (False, 3, 0, 0, 0, 0, "")
    assert run.config_version == 1
    got = statuses("a")
    assert sorted(s for s, _ in got.values()) == ["Binding"] * 3
    assert sorted(n for _, n in got.values()) == ["n0", "n0", "n1"]
    assert run.load_seconds > 0 and run.schedule_seconds > 0 and run.write_seconds > 0
    assert run.duration_seconds >= run.load_seconds + run.schedule_seconds
    # Bound this cycle: Inqueue; Running once its tasks held nodes before a session.
    assert Job.objects.get(name="a").phase == JobPhase.INQUEUE
    cycle_run()
    assert Job.objects.get(name="a").phase == JobPhase.RUNNING


def test_gang_that_cannot_fit_waits_with_one_history_span():
    # 3 x 2.5 cpu on two 4-cpu nodes: one task per node at most, so never (GangExceedsCluster).
    make_cluster(nodes=2, cpu="4")
    submit("big", tasks=3, cpu="2500m")
    t0 = timezone.now()
    first = cycle_run(now=t0)
    job = Job.objects.get(name="big")
    assert (first.binds, first.pending_jobs) == (0, 1)
    assert job.reason_code == "NeverFits"
    assert job.reason_details["kind"] == "GangExceedsCluster"
    assert job.reason_since == t0
    assert set(statuses("big").values()) == {("Pending", None)}
    cycle_run(now=t0 + timedelta(seconds=2))
    job.refresh_from_db()
    assert job.reason_since == t0
    spans = list(JobReasonHistory.objects.values_list("code", "first_seen", "last_seen", "current"))
    assert spans == [("NeverFits", t0, t0 + timedelta(seconds=2), True)]


def test_reason_cleared_and_span_closed_once_bound():
    make_cluster(nodes=1, cpu="2")
    submit("fill", tasks=1, cpu="2")
    submit("wait", tasks=1, cpu="2")
    t0 = timezone.now()
    cycle_run(now=t0)
    assert Job.objects.get(name="wait").reason_code == "QueueOverDeserved"
    Job.objects.get(name="fill").tasks.update(status="Succeeded", node=None)
    run = cycle_run(now=t0 + timedelta(seconds=2))
    wait = Job.objects.get(name="wait")
    assert (run.binds, wait.reason_code, wait.reason_since) == (1, "", None)
    assert list(JobReasonHistory.objects.values_list("code", "current")) == [("QueueOverDeserved", False)]


def test_queue_samples_keep_explanation_on_latest_only():
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=2, cpu="1")
    first = cycle_run()
    second = cycle_run()
    sample = QueueSample.objects.get(cycle=second, queue="q")
    assert sample.allocated == {"cpu": 2000.0, "memory": 2 * 2**30}
    # Proportion: deserved = the request here; allocated reaching deserved is "overused".
    assert sample.deserved == {"cpu": 2000.0, "memory": 2 * 2**30}
    assert (sample.weight, sample.overused) == (1, True)
    assert sample.explanation is not None
    assert not QueueSample.objects.filter(cycle=first, explanation__isnull=False).exists()
    assert QueueSample.objects.filter(cycle=first).count() == QueueSample.objects.filter(cycle=second).count()


def test_no_active_config_uses_default_conf():
    from schedweb.core import services

    services.queue_create(name="q")
    services.node_create(name="n0", allocatable={"cpu": "4", "memory": "8Gi"})
    submit("a", tasks=1)
    run = cycle_run()
    assert (run.config_version, run.binds) == (None, 1)


def test_failure_rolls_back_and_is_recorded(monkeypatch):
    make_cluster(nodes=1)
    submit("a", tasks=1)
    from schedweb.scheduling import cycle

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(cycle, "_write_jobs", broken)
    run = cycle_run()
    assert (run.skipped, run.binds, run.errors) == (False, 0, "RuntimeError: boom")
    assert statuses("a") == {"a-0": ("Pending", None)}
    assert CycleRun.objects.count() == 1


def test_pipelined_on_releasing_room_then_bound_once_released():
    make_cluster(nodes=1, cpu="4")
    old = submit("old", tasks=2, cpu="2")
    cycle_run()
    Task.objects.filter(job=old).update(status="Running")
    job_cancel(job=old)  # both tasks Releasing: n0's room is promised, not free
    submit("new", tasks=1, cpu="2")
    run = cycle_run()
    assert (run.binds, run.pipelined) == (0, 1)
    assert statuses("new") == {"new-0": ("Pipelined", "n0")}
    # A nomination lasts one session: still Releasing, so pipelined again (not lost, not bound).
    assert cycle_run().pipelined == 1
    Task.objects.filter(job=old).update(status="Failed", node=None)
    run = cycle_run()
    assert (run.binds, run.pipelined) == (1, 0)
    assert statuses("new") == {"new-0": ("Binding", "n0")}


RECLAIM_CONF = SIMPLE_CONF.replace("enqueue, allocate, backfill", "enqueue, allocate, reclaim")


def test_reclaim_evicts_to_releasing():
    from schedweb.core import services

    make_cluster(nodes=1, cpu="2", queue="a")
    services.queue_create(name="b")
    services.scheduler_config_activate(yaml=RECLAIM_CONF)
    low = submit("low", tasks=2, cpu="1", queue="a", min_member=1)
    cycle_run()
    Task.objects.filter(job=low).update(status="Running")
    submit("other", tasks=1, cpu="1", queue="b")
    run = cycle_run()
    assert (run.evictions, run.binds, run.pipelined, run.conflicts) == (1, 0, 1, 0)
    assert sorted(statuses("low").values()) == [("Releasing", "n0"), ("Running", "n0")]
    assert statuses("other") == {"other-0": ("Pipelined", "n0")}


def test_prune_history_keeps_recent_cycles(settings):
    from schedweb.scheduling.cycle import prune_history

    settings.SCHEDULER_HISTORY_DAYS = 1
    make_cluster(nodes=1)
    t0 = timezone.now()
    old, recent = cycle_run(now=t0 - timedelta(days=2)), cycle_run(now=t0)
    per_cycle = QueueSample.objects.filter(cycle=recent).count()
    assert prune_history(t0) == per_cycle + 1
    assert list(CycleRun.objects.values_list("id", flat=True)) == [recent.id]
    assert not QueueSample.objects.filter(cycle_id=old.id).exists()

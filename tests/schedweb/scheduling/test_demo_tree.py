"""The demo under schedweb's default (hierarchical capacity) on PostgreSQL: the queue tree holds
in every cycle while the demo moves (simulated agent, heartbeats, arrivals), issue 16 item 3 and
issue 19 item 6."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from schedweb.core.models import Job, Node, Queue, Task, TaskStatus
from schedweb.scheduling.agent import agent_step, report_heartbeats
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from schedweb.scheduling.demo_arrivals import arrive
from schedweb.scheduling.models import CycleRun, QueueSample

from .conftest import requires_postgres

pytestmark = [requires_postgres, pytest.mark.django_db]

T0 = datetime(2026, 1, 1, tzinfo=UTC)  # slot 176722560: a multiple of 7, the shapes start at the first
STEP = timedelta(seconds=15)
IN_QUEUE_USE = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)
EPS = 1e-6


def load_demo_at(t0: datetime) -> None:
    """The demo, its Running tasks started at `t0` (load_demo stamps the real clock), so the
    simulated clock alone decides when they end."""
    load_demo()
    Task.objects.filter(status=TaskStatus.RUNNING).update(started=t0)


def subtree_allocated() -> dict[str, dict[str, float]]:
    """Queue name -> what the tasks of its subtree's jobs hold (stored units), from the tasks."""
    parents = dict(Queue.objects.values_list("name", "parent__name"))
    used: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    holding = Task.objects.filter(status__in=IN_QUEUE_USE)
    for queue, request in holding.values_list("job__queue__name", "request"):
        while queue is not None:
            for dim, value in (request or {}).items():
                used[queue][dim] += float(value)
            queue = parents[queue]
    return used


def capability_violations() -> list[str]:
    """Queues (parents included) whose subtree's tasks hold more than the queue's configured
    capability on some dimension."""
    used = subtree_allocated()
    out = []
    for name, capability in Queue.objects.exclude(capability__isnull=True).order_by("name").values_list(
            "name", "capability"):
        for dim, limit in sorted(capability.items()):
            if used[name].get(dim, 0.0) > limit + EPS:
                out.append(f"{name}: {dim} {used[name][dim]} > capability {limit}")
    return out


def tree_violations(run: CycleRun) -> list[str]:
    """capability_violations, plus queues allocated above their capability or real capability
    as cycle `run` computed them, or whose recorded allocation differs from their tasks'."""
    out = capability_violations()
    used = subtree_allocated()
    for sample in QueueSample.objects.filter(cycle=run):
        for what in ("capability", "real_capability"):
            for dim, limit in (getattr(sample, what) or {}).items():
                if (sample.allocated or {}).get(dim, 0.0) > limit + EPS:
                    out.append(f"{sample.queue}: allocated {dim} {sample.allocated[dim]} > {what} {limit}")
        if sample.queue != "root":
            for dim, value in used[sample.queue].items():
                got = (sample.allocated or {}).get(dim, 0.0)
                if abs(got - value) > EPS:
                    out.append(f"{sample.queue}: sample allocated {dim} {got} != {value} (tasks)")
    return out


def test_research_capability_holds_and_detector_train_names_research():
    load_demo_at(T0)
    run = cycle_run(now=T0)
    assert tree_violations(run) == []
    job = Job.objects.get(name="detector-train")
    assert (job.reason_code, job.reason_message) == (
        "QueueOverCapability",
        "queue research resource quota insufficient: insufficient nvidia.com/gpu (need 8, 4 left)")
    research = QueueSample.objects.get(cycle=run, queue="research")
    assert (research.allocated["nvidia.com/gpu"], research.capability["nvidia.com/gpu"]) == (36000.0, 40000.0)
    assert (research.deserved["cpu"], research.real_capability["cpu"]) == (192000.0, 200000.0)


def test_the_demo_moves_and_the_tree_holds_every_cycle(settings):
    """Ten simulated minutes, a cycle every 15 s: jobs finish, new ones arrive and start, nodes
    report, and no queue (parents included) is ever allocated above its capability."""
    settings.SCHEDULE_PERIOD = 2
    load_demo_at(T0)
    arrived, binds = [], []
    for i in range(40):
        now = T0 + i * STEP
        run = cycle_run(now=now)
        assert run.errors == ""
        binds.append(run.binds)
        assert tree_violations(run) == [], f"cycle {i}"
        agent_step(now=now, period=2)
        report_heartbeats(now)
        job = arrive(run)
        if job is not None:
            arrived.append(job.name)
    assert binds == [36, 0, 0, 2, 9, 6, 0, 4, 2, 4, 1, 0, 4, 2, 0, 2, 2, 7, 4, 4,
                     2, 10, 3, 2, 1, 1, 4, 2, 1, 7, 0, 5, 2, 1, 2, 4, 2, 1, 1, 0]
    # A 15 s step over 10 s slots: the first cycle of slots 0, 1, 3, 4, 6, ... (shapes in turn).
    assert len(arrived) == 40 and arrived[:5] == [
        "eval-batch-176722560", "etl-hourly-176722561", "ci-run-176722563", "report-176722564",
        "detector-eval-176722566"]
    completed = set(Job.objects.filter(phase="Completed").values_list("name", flat=True))
    # Work that ran for its duration ended: the first-minute jobs, and llm-finetune (7-8 min) ...
    assert {"eval-sweep-1", "etl-orders", "augment-preproc", "llm-finetune", "tf-dist"} <= completed
    assert len(completed & set(arrived)) == 29
    # ... whose 16 GPUs let detector-train (blocked by research's 40) start.
    assert Job.objects.get(name="detector-train").phase == "Running"
    assert Job.objects.filter(phase__in=("Pending", "Inqueue")).count() == 6
    assert Node.objects.filter(usage_updated=T0 + 39 * STEP).count() == 21


def test_volcano_flat_default_lets_research_exceed_its_capability():
    """Why the default changed: flat proportion ignores the limits of queues without jobs, so
    the same first cycle puts research above its 40 GPUs (what tree_violations catches)."""
    load_demo_at(T0)
    call_command("scheduler_conf", "--activate", "volcano-default", stdout=StringIO())
    assert cycle_run(now=T0).errors == ""
    assert capability_violations() == [
        "dev: cpu 88500.0 > capability 32000.0", "dev: memory 374199025664.0 > capability 137438953472.0",
        "research: nvidia.com/gpu 44000.0 > capability 40000.0"]

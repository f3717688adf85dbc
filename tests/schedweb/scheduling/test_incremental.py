"""The incremental snapshot equals a full load after any mix of writes and cycles (PostgreSQL).

Each step is a real committed transaction (transaction=True tests): submits, cancels, node
create / update / delete / heartbeat, quota and queue edits, agent steps, task status reports
and cycles, chosen by a seeded random generator. After every cycle the kept snapshot, brought
up to date, must equal a full load of the same rows: nodes' idle/used/releasing/pipelined,
tasks' status and node, jobs' phase, indexes and sums, queues, namespaces, write identities.
"""

from __future__ import annotations

import contextlib
import os
import random
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_cancel, job_submit, task_set_status
from schedweb.core.models import TERMINAL_TASK_STATUSES, Job, JobPhase, Node, Queue, Task
from schedweb.scheduling import incremental
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import active_conf, cycle_run
from tests.scheduler_core.kept_figures import opened_figures

from .conftest import SIMPLE_CONF, requires_postgres
from .snapshot_compare import differences, picture

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]

PREEMPT_CONF = SIMPLE_CONF.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, preempt, backfill"')


def assert_incremental_equals_full() -> None:
    """Bring the kept snapshot up to date and compare it with a full load of the same rows."""
    now = timezone.now()
    with transaction.atomic():
        kept = incremental.load(now, active_conf()[0])
        full = load_state(now)
        assert not kept.full  # the kept snapshot, brought up to date: not a full load
        assert differences(picture(kept), picture(full)) == []
        # The plugins' figures kept with it (framework.kept) equal a fresh build on the full load.
        conf = active_conf()[1]
        cache = incremental._cache
        assert cache is not None and cache.kept is not None
        assert opened_figures(kept.snapshot, conf, cache.kept) == opened_figures(full.snapshot, conf, None)


def _cluster() -> None:
    services.queue_create(name="a")
    services.queue_create(name="b", weight=2)
    for i in range(3):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "16Gi", "pods": 110},
                             labels={"zone": f"z{i % 2}"})
    services.scheduler_config_activate(yaml=PREEMPT_CONF)


class Mix:
    """Random committed writes against the services, the agent and the cycle."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.jobs = 0
        self.nodes = 3
        self.clock = timezone.now()

    def submit(self) -> None:
        rng = self.rng
        self.jobs += 1
        size = rng.choice([1, 1, 2, 3, 4])
        job_submit(namespace=rng.choice(["ns", "team"]), name=f"j{self.jobs}", queue=rng.choice(["a", "b"]),
                   min_member=rng.randint(1, size),
                   tasks=[{"name": f"j{self.jobs}-{i}", "request": {"cpu": rng.choice(["500m", "1", "2"]),
                                                                    "memory": "1Gi"},
                           "duration": rng.choice([None, 0, 5]),
                           "node_selector": rng.choice([{}, {}, {"zone": "z1"}])} for i in range(size)])

    def cancel(self) -> None:
        job = self._pick(Job.objects.exclude(phase__in=[JobPhase.CANCELLED, JobPhase.COMPLETED]))
        if job is not None:
            job_cancel(job=job)

    def node_create(self) -> None:
        self.nodes += 1
        services.node_create(name=f"n{self.nodes}", allocatable={"cpu": self.rng.choice(["2", "8"]),
                                                                 "memory": "16Gi", "pods": 110})

    def node_update(self) -> None:
        node = self._pick(Node.objects.all())
        if node is None:
            return
        choice = self.rng.randrange(3)
        if choice == 0:
            services.node_update(node=node, allocatable={"cpu": self.rng.choice(["3", "6"]), "memory": "16Gi",
                                                         "pods": 110})
        elif choice == 1:
            services.node_update(node=node, unschedulable=not node.unschedulable)
        else:
            services.node_update(node=node, labels={"zone": self.rng.choice(["z0", "z1", "z2"])})

    def node_delete(self) -> None:
        node = self._pick(Node.objects.all())
        if node is not None:
            services.node_delete(node=node)

    def heartbeat(self) -> None:
        node = self._pick(Node.objects.all())
        if node is not None:
            services.node_heartbeat(node=node, usage_cpu=self.rng.uniform(0, 100), usage_memory=50.0)

    def agent(self) -> None:
        self.clock += timedelta(seconds=self.rng.choice([1, 10]))
        agent_step(now=self.clock, period=2)

    def report(self) -> None:
        task = self._pick(Task.objects.exclude(status__in=TERMINAL_TASK_STATUSES))
        if task is not None:
            task_set_status(task=task, status=self.rng.choice(["Running", "Succeeded", "Failed", "Pending"]))

    def quota(self) -> None:
        hard = self.rng.choice([None, {"cpu": "3"}, {"cpu": "20"}])
        services.namespace_quota_set(namespace=self.rng.choice(["team", "other"]), hard=hard)

    def queue(self) -> None:
        queue = Queue.objects.get(name=self.rng.choice(["a", "b"]))
        services.queue_update(queue=queue, weight=self.rng.randint(1, 4))

    def cycle(self) -> None:
        run = cycle_run()
        assert not run.errors and not run.skipped, run.errors

    def _pick(self, queryset):
        ids = list(queryset.order_by("id").values_list("id", flat=True))
        return queryset.model.objects.get(id=self.rng.choice(ids)) if ids else None

    def step(self) -> str:
        name = self.rng.choices(
            ["submit", "cancel", "node_create", "node_update", "node_delete", "heartbeat", "agent", "report",
             "quota", "queue", "cycle"],
            weights=[8, 2, 1, 2, 1, 2, 4, 3, 1, 1, 6])[0]
        # Refused by the services (a busy node, a finished task): nothing was written.
        with contextlib.suppress(ValidationError):
            getattr(self, name)()
        return name


def run_mix(seed: int, steps: int) -> int:
    """`steps` random steps; after each cycle the kept snapshot must equal a full load. Returns
    the number of comparisons."""
    _cluster()
    mix = Mix(seed)
    for _ in range(3):
        mix.submit()
    mix.cycle()
    loads = incremental.full_loads
    compared = 0
    for _ in range(steps):
        if mix.step() == "cycle":
            assert_incremental_equals_full()
            compared += 1
    mix.cycle()
    assert_incremental_equals_full()
    assert incremental.full_loads == loads, "the mix never needs a full load (no renames, no classes)"
    return compared + 1


@pytest.fixture(autouse=True)
def _no_periodic_full_load(settings):
    settings.SCHEDULER_FULL_RELOAD_EVERY = 10**9  # every load below must be incremental


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_mix_incremental_equals_full_load(seed):
    assert run_mix(seed, steps=60) >= 5


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(100, 100 + int(os.environ.get("INCREMENTAL_SOAK_SEEDS", "10"))))
def test_random_mix_soak(seed):
    run_mix(seed, steps=400)

"""The foreign jobs from memory equal the SQL answer, through random changes (PostgreSQL).

`Instance.foreign_in` classifies the loaded jobs by the scheduler name their kept rows carry
(adapter.JobRow.scheduler_name, brought up to date by the incremental loader). After every
random committed change (submits naming any scheduler, a job moved to another scheduler,
cancels, task reports, agent steps, cycles of any instance) each instance's kept snapshot is
brought up to date and must give exactly the set the former per-cycle query gave, and the
scheduler names it keeps must equal those of a fresh full load.
"""

from __future__ import annotations

import contextlib

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedweb.core.job_services import job_cancel
from schedweb.core.models import Job, JobPhase, NodeShard, Queue
from schedweb.scheduling import incremental, shard_runtime
from schedweb.scheduling.adapter import LoadedState, load_state
from schedweb.scheduling.cycle import active_conf, cycle_run
from schedweb.scheduling.snapshot_sql import JOBS

from .conftest import agent_tick, make_cluster, report_task, requires_postgres, submit

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("fresh_shard_caches")]

SCHEDULERS = ("volcano", "sched-a", "sched-b", "other")
INSTANCES = ("", "a", "b")
OPS = ("submit", "submit", "route", "route", "cancel", "report", "agent", "cycle", "cycle")
# What every cycle asked the database before the names were kept (the reference answer).
FOREIGN_SQL = f"SELECT namespace || '/' || name FROM core_job WHERE ({JOBS.where}) AND {{cond}}"


def foreign_by_sql(inst: shard_runtime.Instance, state: LoadedState) -> frozenset[str]:
    """The foreign jobs as the former query read them (restricted to the snapshot's jobs)."""
    cond, params = inst._cond()
    with connection.cursor() as cursor:
        cursor.execute(FOREIGN_SQL.format(cond=cond), params)
        return frozenset(uid for (uid,) in cursor.fetchall() if uid in state.snapshot.jobs)


def names(state: LoadedState) -> dict[str, str]:
    """Job uid -> the scheduler name its kept row carries."""
    return {uid: row.scheduler_name for uid, row in state.jobs.items()}


def check_every_instance() -> None:
    """Each instance's kept snapshot, brought up to date: memory's answer == the query's."""
    now = timezone.now()
    for shard in INSTANCES:
        incremental.use_shard(shard)
        with transaction.atomic():
            kept = incremental.load(now, active_conf()[0])
            inst = shard_runtime.resolve(shard)
            assert inst.foreign_in(kept.snapshot, kept) == foreign_by_sql(inst, kept)
            assert names(kept) == names(load_state(now))
    incremental.use_shard("")


class World:
    """The committed changes the examples draw from (names stay unique across examples)."""

    jobs = 0
    clock = timezone.now()

    @classmethod
    def ensure(cls) -> None:
        if not Queue.objects.filter(name="q").exists():
            make_cluster(nodes=4, cpu="4")
            for name, mode, nodes in (("a", "hard", ["n0", "n1"]), ("b", "soft", ["n2", "n3"])):
                NodeShard.objects.create(name=name, scheduler_name=f"sched-{name}", mode=mode,
                                         nodes_desired=nodes)

    @classmethod
    def step(cls, op: str, pick: int, scheduler: str) -> None:
        if op == "submit":
            cls.jobs += 1
            job = submit(f"f{cls.jobs}", tasks=1 + pick % 3, cpu="1", duration=pick % 2 * 5 or None)
            Job.objects.filter(pk=job.pk).update(scheduler_name=scheduler)
        elif op == "route":
            rows = list(Job.objects.order_by("id").values_list("id", "scheduler_name"))
            if rows:  # always to another scheduler than the job's
                pk, current = rows[pick % len(rows)]
                others = [name for name in SCHEDULERS if name != current]
                Job.objects.filter(pk=pk).update(scheduler_name=others[SCHEDULERS.index(scheduler) % 3])
        elif op == "cancel":
            ids = list(Job.objects.exclude(phase__in=[JobPhase.CANCELLED, JobPhase.COMPLETED])
                       .order_by("id").values_list("id", flat=True))
            if ids:
                job_cancel(job=Job.objects.get(pk=ids[pick % len(ids)]))
        elif op == "report":
            report_task(pick)
        elif op == "agent":
            cls.clock = agent_tick(cls.clock)
        else:
            run = cycle_run(shard=INSTANCES[pick % len(INSTANCES)])
            assert not run.errors and not run.skipped, run.errors


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 999), st.sampled_from(SCHEDULERS)),
                      min_size=1, max_size=8))
def test_foreign_jobs_from_memory_equal_the_query_through_random_changes(steps):
    World.ensure()
    check_every_instance()
    for op, pick, scheduler in steps:
        with contextlib.suppress(ValidationError):  # refused by the services: nothing written
            World.step(op, pick, scheduler)
        check_every_instance()


def test_a_job_moved_to_another_scheduler_changes_sides_without_a_full_load():
    World.ensure()
    job = submit("moved", tasks=1)
    Job.objects.filter(pk=job.pk).update(scheduler_name="sched-a")
    check_every_instance()
    loads = incremental.full_loads
    Job.objects.filter(pk=job.pk).update(scheduler_name="sched-b")
    incremental.use_shard("a")
    with transaction.atomic():
        kept = incremental.load(timezone.now(), active_conf()[0])
        assert not kept.full and incremental.full_loads == loads
        assert "ns/moved" in shard_runtime.resolve("a").foreign_in(kept.snapshot, kept)
    incremental.use_shard("")

"""Builders for the scheduling tests: a small cluster made through the core services."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import pytest
from django.db import connection

from schedweb.core import services
from schedweb.core.job_services import job_submit, task_set_status
from schedweb.core.models import NODE_BOUND_TASK_STATUSES, TERMINAL_TASK_STATUSES, Node, Task
from schedweb.scheduling import incremental

requires_postgres = pytest.mark.skipif(connection.vendor != "postgresql",
                                       reason="needs PostgreSQL (DATABASE_URL=postgres://...)")

# The default configuration without binpack/nodeorder surprises: tests assert exact nodes.
SIMPLE_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def make_cluster(nodes: int = 2, cpu: str = "4", queue: str = "q") -> None:
    """`nodes` nodes n0..n{k} of `cpu` cores / 8Gi, one leaf queue, the simple conf active."""
    services.queue_create(name=queue)
    for i in range(nodes):
        services.node_create(name=f"n{i}", allocatable={"cpu": cpu, "memory": "8Gi", "pods": 110})
    services.scheduler_config_activate(yaml=SIMPLE_CONF)


def submit(name: str, tasks: int = 1, cpu: str = "1", queue: str = "q", min_member: int | None = None,
           duration: float | None = None):
    """A job of `tasks` identical tasks `<name>-<i>` in namespace "ns"."""
    return job_submit(namespace="ns", name=name, queue=queue, min_member=min_member or tasks,
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": "1Gi"},
                              "duration": duration} for i in range(tasks)])


def report_task(pick: int) -> None:
    """An outside writer's task report: the `pick`-th unfinished task (id order) turns Running,
    Succeeded or Failed (by `pick`); nothing when every task is done."""
    ids = list(Task.objects.exclude(status__in=TERMINAL_TASK_STATUSES).order_by("id")
               .values_list("id", flat=True))
    if ids:
        task_set_status(task=Task.objects.get(pk=ids[pick % len(ids)]),
                        status=("Running", "Succeeded", "Failed")[pick % 3])


def agent_tick(clock: datetime) -> datetime:
    """One step of the simulated node agent at `clock` plus 10 s; returns that instant."""
    from schedweb.scheduling.agent import agent_step

    clock += timedelta(seconds=10)
    agent_step(now=clock, period=2)
    return clock


def statuses(job_name: str | None = None) -> dict[str, tuple[str, str | None]]:
    """task name -> (status, node name)."""
    qs = Task.objects.all() if job_name is None else Task.objects.filter(job__name=job_name)
    return {name: (status, node) for name, status, node in qs.values_list("name", "status", "node__name")}


def node_load_milli() -> dict[str, float]:
    """Requested milli-cpu of tasks holding each node."""
    load: dict[str, float] = defaultdict(float)
    for node, request in Task.objects.filter(status__in=NODE_BOUND_TASK_STATUSES).values_list(
            "node__name", "request"):
        load[node] += request.get("cpu", 0)
    return dict(load)


def allocatable_milli() -> dict[str, float]:
    """Node name -> allocatable milli-cpu."""
    return {name: alloc["cpu"] for name, alloc in Node.objects.values_list("name", "allocatable")}


def test_database_url() -> str:
    """A URL of the test database, for subprocesses (celery worker, run_scheduler)."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def fresh_shard_caches():
    """Each instance's kept snapshot forgotten before and after the test (the unsharded one
    selected again): shard tests switch instances in one process."""
    incremental.use_shard("")
    incremental.forget()
    incremental._others.clear()
    yield
    incremental.use_shard("")
    incremental.forget()
    incremental._others.clear()

"""The forecast on a sharded cluster: one session per scheduler instance and simulated cycle, each
placing only its own jobs (framework.sharding), so a hard shard's job waits for its own nodes.

The cluster: two 4-CPU nodes; n1 (shard a) is full until T+600 (`ra`, shard a's), n2 (shard b)
is free. `ja` (shard a's scheduler) and `jb` (shard b's) each need 4 CPU."""

from __future__ import annotations

from scheduler_core.forecast import Basis, forecast
from scheduler_core.forecast.types import JobForecast
from scheduler_core.framework.conf import DEFAULT_CONF
from scheduler_core.framework.sharding import HARD, SOFT, Sharding
from scheduler_core.model import ClusterSnapshot
from tests.scheduler_core.builders import job, node, queue, snapshot, task

T = 1_767_229_200.0


def _cluster() -> ClusterSnapshot:
    running = [task(f"ra-{i}", cpu="2", status="Running", node="n1", started=T - 1000, duration=1600)
               for i in range(2)]
    return snapshot(
        nodes=[node("n1", cpu="4", memory="16Gi"), node("n2", cpu="4", memory="16Gi")],
        queues=[queue("q")],
        jobs=[job("ra", queue="q", min_available=2, phase="Running", created=T - 2000, tasks=running),
              job("ja", queue="q", min_available=1, phase="Pending", created=T - 30,
                  tasks=[task("ja-0", cpu="4", duration=3600)]),
              job("jb", queue="q", min_available=1, phase="Pending", created=T - 20,
                  tasks=[task("jb-0", cpu="4", duration=3600)])],
        now=T)


def _instances(mode: str) -> tuple[Sharding, Sharding]:
    # Shard a answers to scheduler a (ra, ja), shard b to scheduler b (jb).
    a = Sharding(mode, "a", frozenset({"n1"}), "a", frozenset({"ns/jb"}))
    b = Sharding(mode, "b", frozenset({"n2"}), "b", frozenset({"ns/ra", "ns/ja"}))
    return a, b


def test_unsharded_the_first_job_takes_the_free_node():
    fc = forecast(_cluster(), DEFAULT_CONF, now=T)
    # ja (older) takes n2 now; jb waits for n1 at T+600.
    assert fc.jobs == {"ns/ja": JobForecast(T, Basis.DECLARED), "ns/jb": JobForecast(T + 600, Basis.DECLARED)}


def test_hard_shards_each_job_waits_for_its_own_nodes():
    fc = forecast(_cluster(), DEFAULT_CONF, now=T, shardings=_instances(HARD))
    # ja may only use n1 (free at T+600); jb takes n2 at once.
    assert fc.jobs == {"ns/ja": JobForecast(T + 600, Basis.DECLARED), "ns/jb": JobForecast(T, Basis.DECLARED)}


def test_soft_shards_prefer_their_nodes_but_use_any():
    a, b = _instances(SOFT)
    # Shard a's instance runs first: n1 is full, so ja takes n2 outside its shard; jb waits.
    fc = forecast(_cluster(), DEFAULT_CONF, now=T, shardings=(a, b))
    assert fc.jobs == {"ns/ja": JobForecast(T, Basis.DECLARED), "ns/jb": JobForecast(T + 600, Basis.DECLARED)}


def test_one_instance_alone_never_starts_the_others_jobs():
    a, _ = _instances(HARD)
    fc = forecast(_cluster(), DEFAULT_CONF, now=T, shardings=(a,))
    assert fc.jobs["ns/ja"] == JobForecast(T + 600, Basis.DECLARED)
    assert fc.jobs["ns/jb"].estimated_start is None

"""Properties of scheduler sharding (framework.sharding) over random small clusters.

- Hard mode: no action places (binds, pipelines) or evicts outside the shard, whatever the
  plugins, normal or topology-aware preempt.
- Soft mode, one task: its node is the best-scoring node of the first non-empty group of
  allocate's four (idle fit in the shard, idle fit elsewhere, future-idle fit in the shard,
  future-idle fit elsewhere), bound for an idle group, pipelined for a future one.
- Soft mode, many tasks: allocate's caches and runs decide as a placer that rebuilds every
  class state for every task, one task at a time, with or without the feasible-node limit.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.allocate.placer import Placer
from scheduler_core.framework.node_search import NodeScan, SearchOptions
from scheduler_core.framework.sharding import Sharding
from scheduler_core.model import TaskStatus
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.actions.allocate.test_allocate_runs import CONFIGS, build_world, result_json, worlds
from tests.scheduler_core.actions.allocate.test_allocate_search_limit import fresh_best
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

TIERS = {
    "plain": [["priority", "gang"], ["proportion"]],
    "predicates": [["priority", "gang", "conformance"], ["predicates", "proportion", "nodeorder"]],
}
LEAST = [["priority", "gang"], ["predicates", {"name": "nodeorder", "arguments": {
    "leastrequested.weight": 1, "balancedresource.weight": 0}}]]
# Per node: cpu, a Running task's cpu (0 = none), a Releasing task's cpu (0 = none).
node_spec = st.tuples(st.sampled_from([2, 4, 8]), st.sampled_from([0, 1, 2, 4]), st.sampled_from([0, 1, 2]))
# Per job: queue, tasks, cpu per task (0 = best effort), priority.
job_spec = st.tuples(st.sampled_from(["qa", "qb"]), st.integers(1, 3), st.sampled_from([0, 1, 2, 3]),
                     st.integers(0, 50))


def _cluster(nodes, running, waiting):
    """Nodes n0.. with their held tasks (one low-priority job per queue), and the waiting jobs."""
    held = {"qa": [], "qb": []}
    for i, (cpu, run_cpu, rel_cpu) in enumerate(nodes):
        q = "qa" if i % 2 else "qb"
        if run_cpu and run_cpu <= cpu:
            held[q].append(task(f"r{i}", cpu=str(run_cpu), status="Running", node=f"n{i}"))
        if rel_cpu and rel_cpu + (run_cpu if run_cpu <= cpu else 0) <= cpu:
            held[q].append(task(f"x{i}", cpu=str(rel_cpu), status="Releasing", node=f"n{i}"))
    jobs = [job(f"held-{q}", queue=q, tasks=ts, phase="Running", min_available=1, priority=0)
            for q, ts in held.items() if ts]
    for j, (q, n, cpu, prio) in enumerate(waiting):
        c, m = (None, None) if cpu == 0 else (str(cpu), "1Gi")
        jobs.append(job(f"w{j}", queue=q, priority=prio, min_available=1,
                        tasks=[task(f"w{j}-{k}", cpu=c, memory=m) for k in range(n)]))
    return snapshot(nodes=[node(f"n{i}", cpu=str(spec[0]), memory="64Gi") for i, spec in enumerate(nodes)],
                    queues=[queue("qa"), queue("qb")], jobs=jobs)


@settings(profiled(settings(max_examples=60)))
@given(st.lists(node_spec, min_size=2, max_size=5), st.data(), st.lists(job_spec, min_size=1, max_size=4),
       st.sampled_from(sorted(TIERS)), st.booleans())
def test_hard_mode_never_places_or_evicts_outside_the_shard(nodes, data, waiting, tiers, topology):
    names = [f"n{i}" for i in range(len(nodes))]
    shard = data.draw(st.sets(st.sampled_from(names)), label="shard")
    snap = _cluster(nodes, (), waiting)
    cfg = conf("enqueue, allocate, preempt, reclaim, backfill", TIERS[tiers],
               preempt={"enableTopologyAwarePreemption": topology})
    held_on = {t.uid: t.node_name for j in snap.jobs.values() for t in j.tasks.values()}
    result = run_session(snap, cfg, sharding=Sharding.of("hard", "s", shard))
    placed = {**result.binds, **result.pipelined}
    assert set(placed.values()) <= shard, (placed, shard)
    assert {held_on[uid] for uid in result.evictions} <= shard, (result.evictions, shard)


def _groups(snap, shard, cpu):
    """allocate's four soft groups for one request of `cpu` cores (no other predicate applies)."""
    idle, future = [], []
    for name, n in sorted(snap.nodes.items()):
        free = n.idle.milli_cpu / 1000
        fut = n.future_idle().milli_cpu / 1000
        if cpu <= free:
            idle.append(name)
        elif cpu <= fut:
            future.append(name)
    return [([n for n in idle if n in shard], False), ([n for n in idle if n not in shard], False),
            ([n for n in future if n in shard], True), ([n for n in future if n not in shard], True)]


@settings(profiled(settings(max_examples=60)))
@given(st.lists(node_spec, min_size=1, max_size=5), st.data(), st.sampled_from([1, 2, 3]))
def test_soft_mode_takes_the_best_node_of_the_first_group_with_one(nodes, data, cpu):
    names = [f"n{i}" for i in range(len(nodes))]
    shard = data.draw(st.sets(st.sampled_from(names)), label="shard")

    def build(keep=None):
        snap = _cluster(nodes, (), [("qa", 1, cpu, 10)])
        if keep is not None:  # only these nodes (and the tasks they hold)
            for name in [n for n in snap.nodes if n not in keep]:
                for t in list(snap.nodes[name].tasks.values()):
                    snap.jobs[t.job_uid].delete_task(t)
                del snap.nodes[name]
        return snap

    result = run_session(build(), conf("allocate", LEAST), sharding=Sharding.of("soft", "s", shard))
    placed = {**result.binds, **result.pipelined}
    group = next(((g, pipelined) for g, pipelined in _groups(build(), shard, cpu) if g), None)
    if group is None:
        assert placed == {}
        return
    members, pipelined = group
    # The best of the group alone: the same session over just its nodes, without sharding
    # (leastrequested scores a node by its own figures only).
    alone = run_session(build(keep=set(members)), conf("allocate", LEAST))
    expected = alone.pipelined if pipelined else alone.binds
    assert (result.pipelined if pipelined else result.binds) == expected, (shard, members)
    assert len(placed) == 1


@pytest.mark.parametrize("name", ["binpack", "default"])
@pytest.mark.parametrize("limited", [False, True])
@settings(profiled(settings(max_examples=25)))
@given(world=worlds, data=st.data())
def test_soft_mode_caches_and_runs_decide_as_from_scratch(name, limited, world, data):
    names = [f"n{i}" for i in range(len(world["nodes"]))]
    shard = Sharding.of("soft", "s", data.draw(st.sets(st.sampled_from(names)), label="shard"))
    cfg = conf("enqueue, allocate, backfill", CONFIGS[name])
    if limited:
        limit = SearchOptions(minimum_feasible_nodes=1, percentage_nodes_to_find=50)
        cfg = dataclasses.replace(cfg, options=limit)
    cached = result_json(run_session(build_world(world), cfg, node_scan=NodeScan(), sharding=shard))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Placer, "best", fresh_best)
        m.setattr(AllocateAction, "runs", False)
        scratch = result_json(run_session(build_world(world), cfg, node_scan=NodeScan(), sharding=shard))
    assert cached == scratch


def test_the_held_tasks_of_the_generator_are_as_meant():
    # (the generator's own check: a Running and a Releasing task land where they say)
    snap = _cluster([(4, 2, 1)], (), [("qa", 1, 1, 0)])
    statuses = sorted((t.name, t.status, t.node_name) for j in snap.jobs.values() for t in j.tasks.values())
    assert statuses == [("r0", TaskStatus.RUNNING, "n0"), ("w0-0", TaskStatus.PENDING, None),
                        ("x0", TaskStatus.RELEASING, "n0")]

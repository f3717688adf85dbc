"""The sharding controller: the policy `assign` as a table of cases and as properties (no node in
two shards, ranges respected when satisfiable, deterministic, adding a node moves at most that
node), and `controller_step` on real rows (the in-flight rule, swaps, the beat task, the command)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedweb.scheduling.shard_controller import NodeLoad, ShardPolicy, assign


def shard(name: str, lo: float = 0.0, hi: float = 1.0, *current: str, min_nodes: int = 0,
          max_nodes: int | None = None) -> ShardPolicy:
    """A policy row: shard("a", 0, 0.5, "n1", max_nodes=2)."""
    return ShardPolicy(name, min_nodes, max_nodes, lo, hi, tuple(current))


def nodes(**utilization: float) -> list[NodeLoad]:
    """nodes(n1=0.2, n2=0.9): node name -> CPU utilisation."""
    return [NodeLoad(name, u) for name, u in utilization.items()]


CASES = [
    ("each band takes its nodes",
     [shard("idle", 0, 0.5), shard("busy", 0.5001, 1)], nodes(n1=0.1, n2=0.9, n3=0.3),
     {"idle": ["n1", "n3"], "busy": ["n2"]}),
    ("max_nodes caps a band; the rest go to the shard with the fewest nodes",
     [shard("a", 0, 0.5, max_nodes=1), shard("b", 0.9, 1)], nodes(n1=0.1, n2=0.2, n3=0.3),
     {"a": ["n1"], "b": ["n2", "n3"]}),
    ("a node in no band goes to the shard with the fewest nodes",
     [shard("a", 0, 0.1), shard("b", 0.9, 1)], nodes(n1=0.05, n2=0.5),
     {"a": ["n1"], "b": ["n2"]}),
    ("min_nodes takes the unplaced node nearest the band",
     [shard("a", 0, 0.1), shard("b", 0.8, 1, min_nodes=1)], nodes(n1=0.05, n2=0.3, n3=0.6),
     {"a": ["n1", "n2"], "b": ["n3"]}),
    ("min_nodes takes from a shard above its own minimum",
     [shard("a", 0, 1), shard("b", 0.9, 1, min_nodes=1)], nodes(n1=0.1, n2=0.2),
     {"a": ["n1"], "b": ["n2"]}),
    ("a node stays in its shard while the band allows it (overlapping bands)",
     [shard("a", 0, 1), shard("b", 0, 1, "n1", "n2")], nodes(n1=0.5, n2=0.5, n3=0.5),
     {"a": ["n3"], "b": ["n1", "n2"]}),
    ("a node that crossed bands moves",
     [shard("idle", 0, 0.5, "n1", "n2"), shard("busy", 0.5001, 1)], nodes(n1=0.9, n2=0.1),
     {"idle": ["n2"], "busy": ["n1"]}),
    ("but not below its shard's min_nodes",
     [shard("idle", 0, 0.5, "n1", min_nodes=1), shard("busy", 0.5001, 1)], nodes(n1=0.9),
     {"idle": ["n1"], "busy": []}),
    ("a node gone is dropped; over max_nodes the out-of-band nodes go first",
     [shard("a", 0, 0.5, "n1", "n2", "gone", max_nodes=1), shard("b", 0.6, 1)], nodes(n1=0.9, n2=0.1),
     {"a": ["n2"], "b": ["n1"]}),
]


@pytest.mark.parametrize(("case", "shards", "loads", "expected"), CASES, ids=[c[0] for c in CASES])
def test_assign(case, shards, loads, expected):
    assert assign(shards, loads) == expected


def test_unschedulable_nodes_stay_where_they_are():
    loads = [NodeLoad("n1", 0.9, unschedulable=True), NodeLoad("n2", 0.9, unschedulable=True)]
    assert assign([shard("a", 0, 0.5, "n1"), shard("b", 0.5, 1)], loads) == {"a": ["n1"], "b": []}


BAND = st.tuples(st.sampled_from([0, 0.2, 0.5, 0.8]), st.sampled_from([0.2, 0.5, 0.8, 1])).filter(
    lambda b: b[0] <= b[1])
POLICY = st.tuples(BAND, st.integers(0, 3), st.one_of(st.none(), st.integers(0, 6)))
UTIL = st.sampled_from([0, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 1])


@st.composite
def worlds(draw) -> tuple[list[ShardPolicy], list[NodeLoad]]:
    """Up to 4 shards with ranges (min <= max) and bands, up to 10 nodes, no current assignment."""
    policies = []
    for i in range(draw(st.integers(1, 4))):
        (lo, hi), low, high = draw(POLICY)
        policies.append(ShardPolicy(f"s{i}", low, None if high is None else max(low, high), lo, hi))
    loads = [NodeLoad(f"n{i:02d}", draw(UTIL)) for i in range(draw(st.integers(0, 10)))]
    return policies, loads


def _with_current(policies: list[ShardPolicy], out: dict[str, list[str]]) -> list[ShardPolicy]:
    return [ShardPolicy(p.name, p.min_nodes, p.max_nodes, p.cpu_min, p.cpu_max, tuple(out[p.name]))
            for p in policies]


@settings(max_examples=300)
@given(world=worlds())
def test_no_node_in_two_shards_and_ranges_hold_when_they_can(world):
    policies, loads = world
    out = assign(policies, loads)
    placed = [n for members in out.values() for n in members]
    assert len(placed) == len(set(placed)) and set(placed) <= {n.name for n in loads}
    for p in policies:
        assert p.max_nodes is None or len(out[p.name]) <= p.max_nodes
    if sum(p.min_nodes for p in policies) <= len(loads):
        assert all(len(out[p.name]) >= p.min_nodes for p in policies), out
    room = sum(p.max_nodes for p in policies) if all(p.max_nodes is not None for p in policies) else None
    assert len(placed) == (len(loads) if room is None else min(room, len(loads)))  # none left idle
    assert assign(policies, loads) == out  # the same input gives the same output


@settings(max_examples=300)
@given(world=worlds(), extra=UTIL)
def test_the_assignment_is_kept_and_adding_a_node_moves_only_that_node(world, extra):
    policies, loads = world
    out = assign(policies, loads)
    again = assign(_with_current(policies, out), loads)
    assert again == out  # a step on an unchanged cluster changes nothing
    grown = assign(_with_current(policies, out), [*loads, NodeLoad("new", extra)])
    moved = {n for name in out for n in set(out[name]) ^ set(grown[name])}
    assert moved <= {"new"}, (policies, loads, out, grown)


# --------------------------------------------------------------------------- on real rows


def _cluster() -> None:
    """n0..n3 (4 cpu each), queue q; shard `low` (sched-low, band 0..0.5) desires n0 n1, shard
    `high` (sched-high, band 0.5..1) n2, which runs a 3-cpu task of the default scheduler."""
    from schedweb.core import services

    services.queue_create(name="q")
    for i in range(4):
        services.node_create(name=f"n{i}", allocatable={"cpu": "4", "memory": "8Gi"})
    services.node_shard_create(name="low", scheduler_name="sched-low", cpu_utilization_max=0.5,
                               nodes_desired=["n0", "n1"])
    services.node_shard_create(name="high", scheduler_name="sched-high", cpu_utilization_min=0.5001,
                               nodes_desired=["n2"])
    _load("n2", "volcano", "Running", name="steady")


def _load(node: str, scheduler: str, status: str, name: str = "busy") -> None:
    """A job routed to `scheduler` whose 3-cpu task is `status` on `node` (75% of its cpu)."""
    from schedweb.core import services

    services.job_submit(namespace="ns", name=name, queue="q", scheduler_name=scheduler, phase="Running",
                        tasks=[{"name": f"{name}-0", "request": {"cpu": "3"}, "status": status,
                                "node": node}])


def _desired() -> dict[str, list[str]]:
    from schedweb.core.models import NodeShard

    return dict(NodeShard.objects.values_list("name", "nodes_desired"))


@pytest.mark.django_db
def test_a_node_moves_only_when_its_shard_has_no_work_in_flight_on_it():
    from schedweb.core.models import Task
    from schedweb.scheduling.shard_controller import controller_step

    _cluster()
    _load("n1", "sched-low", "Binding")
    _load("n1", "sched-high", "Allocated", name="other")  # another shard's work does not hold it
    summary = controller_step()
    # n1 crossed into high's band, but low's scheduler is still binding there: it stays in low.
    # n3 (idle) goes to low, whose band holds it.
    assert _desired() == {"low": ["n0", "n1", "n3"], "high": ["n2"]}
    assert (summary["changed"], summary["held_back"]) == (["low"], 1)
    for status in ("Pipelined", "Allocated", "Releasing"):
        Task.objects.filter(name="busy-0").update(status=status)
        assert controller_step()["held_back"] == 1 and _desired()["low"] == ["n0", "n1", "n3"]
    Task.objects.filter(name="busy-0").update(status="Running")  # bound: no longer in flight
    assert controller_step()["changed"] == ["low", "high"]
    assert _desired() == {"low": ["n0", "n3"], "high": ["n1", "n2"]}
    assert controller_step()["changed"] == []  # nothing came, went or crossed: nothing written


@pytest.mark.django_db
def test_nodes_swapped_between_shards_are_written_without_a_node_in_two_shards():
    from schedweb.core.models import Node, NodeShard, Task
    from schedweb.scheduling.shard_controller import controller_step

    _cluster()

    NodeShard.objects.filter(name="low").update(nodes_desired=["n2"])
    NodeShard.objects.filter(name="high").update(nodes_desired=["n0"])
    Task.objects.filter(name="steady-0").update(node=Node.objects.get(name="n0"))
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    controller_step(now=when)
    assert _desired() == {"low": ["n1", "n2", "n3"], "high": ["n0"]}
    NodeShard.objects.filter(name="low").update(nodes_desired=["n0"])  # a swap: each holds the other's
    NodeShard.objects.filter(name="high").update(nodes_desired=["n1", "n2", "n3"])
    assert sorted(controller_step(now=when)["changed"]) == ["high", "low"]
    assert _desired() == {"low": ["n1", "n2", "n3"], "high": ["n0"]}
    assert set(NodeShard.objects.values_list("last_update_time", flat=True)) == {when}


@pytest.mark.django_db
def test_the_command_runs_one_step():
    from io import StringIO

    from django.core.management import call_command

    _cluster()
    out = StringIO()
    call_command("shard_controller", "--once", stdout=out)
    assert out.getvalue().strip() == "{'shards': 2, 'changed': ['low'], 'held_back': 0}"
    assert _desired() == {"low": ["n0", "n1", "n3"], "high": ["n2"]}


def test_the_beat_task_is_registered_every_period(settings):
    from schedweb.celery import app, setup_beat

    app.loader.import_default_modules()
    assert "schedweb.scheduling.shard_controller" in app.tasks
    settings.SHARD_CONTROLLER_PERIOD = 7
    entries = []

    class Sender:
        signature = staticmethod(lambda name: name)

        @staticmethod
        def add_periodic_task(period, task, **kwargs):
            entries.append((period, task, kwargs))

    setup_beat(Sender)
    beat = {"name": "shard-controller", "expires": 7.0}
    assert (7.0, "schedweb.scheduling.shard_controller", beat) in entries

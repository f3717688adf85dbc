"""Every plugin's fast companions agree with the callbacks they accompany (one shared property test).

Companions are declared with the registration they accompany (framework/extension_points.py,
`COMPANIONS`). For every registered plugin and argument variant, on random small clusters, at
open and again after random placements and evictions:
- `key_fn` (job / queue order): comparing two keys has the sign of `fn(l, r)`;
- `static_key_fn` (queue order): over the queues it was given (every queue, those holding jobs),
  a key it returns orders them as `fn(l, r)` then the fallback (creation time, name);
- `row_fn` (node order / batch node order): equals `fn`'s score of that row scored alone (a
  one-row mask over the full table, and a one-row view), exactly;
- `static=True` (predicate): a task with the same `sched_key` (other name, namespace, job) gets
  the same answer in any session over the same nodes, whatever runs where;
- `victim_job_filter` (preemptable / reclaimable): no victim belongs to a job the filter refuses,
  and the callback never abstains;
- `count_fn` (allocatable): for a task and its job's queue, the number of copies `allocatable`
  lets through one after another, each copy's allocate event fired in between.
Signatures, the fifth companion, are checked the same way in test_signatures.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.registry import load_all, plugin_builders
from scheduler_core.framework.session import Session, open_session
from scheduler_core.model import OCCUPYING_STATUSES, QueueInfo, TaskInfo, TaskStatus
from tests.conftest import profiled
from tests.scheduler_core.builders import GPU, conf, job, node, snapshot, task

NOW = 1_000.0
CHECKED = ("key_fn", "static_key_fn", "row_fn", "static", "victim_job_filter", "count_fn")
# Argument sets (and switches) that take a plugin's optional paths; the default is always tried.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "sla": [{"arguments": {"sla-waiting-time": "10m"}}],
    "nodeorder": [{"arguments": {"mostrequested.weight": 2, "leastrequested.weight": 0,
                                 "balancedresource.weight": 3, "podaffinity.weight": 3}},
                  {"arguments": {"tainttoleration.weight": 0, "podtopologyspread.weight": 0,
                                 "nodeaffinity.weight": 5}}],
    "binpack": [{"arguments": {"binpack.resources": GPU, f"binpack.resources.{GPU}": 3,
                               "binpack.weight": 2, "binpack.memory": 0}}],
    "usage": [{"arguments": {"usage.weight": 2, "thresholds": {"cpu": 50, "mem": 60}}}],
    "capacity": [{"enableHierarchy": True}],
}


def declared(ssn: Session, plugin: str) -> dict[str, set[str]]:
    """kind -> the companion keywords `plugin` declared (None / False count as not declared)."""
    out: dict[str, set[str]] = {}
    for kind, by_plugin in ssn._companions.items():
        found = {k for k, v in by_plugin.get(plugin, {}).items() if v is not None and v is not False}
        if found and any(name == plugin for name, _ in ssn.enabled_fns(kind)[0]):
            out[kind] = found
    return out


def _probe(name: str, option: dict[str, Any]) -> dict[str, set[str]]:
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=[job("j", tasks=[task("t")])]),
                       conf("allocate", [[{"name": name, **option}]]))
    return declared(ssn, name)


def _cases() -> list:
    load_all()
    cases = []
    for name in sorted(plugin_builders):
        if name.startswith("_t_"):
            continue
        for i, option in enumerate([{}, *VARIANTS.get(name, [])]):
            if any(set(kws) & set(CHECKED) for kws in _probe(name, option).values()):
                cases.append(pytest.param(name, option, id=f"{name}-{i}"))
    return cases


CASES = _cases()


def test_the_builtin_plugins_declare_these_companions():
    load_all()
    got = {name: found for name in sorted(plugin_builders) if not name.startswith("_t_")
           if (found := _probe(name, {}))}
    assert got == {
        "binpack": {"node_order": {"row_fn", "signature"}},
        "capacity": {"queue_order": {"static_key_fn"}, "allocatable": {"count_fn"}},
        "drf": {"job_order": {"key_fn"}},
        "gang": {"job_order": {"key_fn"}, "preemptable": {"victim_job_filter"},
                 "reclaimable": {"victim_job_filter"}},
        "nodeorder": {"node_order": {"row_fn", "signature"}, "batch_node_order": {"row_fn", "signature"}},
        "predicates": {"predicate": {"signature"}},
        "priority": {"job_order": {"key_fn"}},
        "proportion": {"queue_order": {"key_fn"}, "allocatable": {"count_fn"}},
        "sla": {"job_order": {"key_fn"}},
        "usage": {"predicate": {"static", "signature"}, "node_order": {"signature"}},
    }


def test_a_re_registration_replaces_the_companions():
    ssn = open_session(snapshot(nodes=[node("n1")]), conf("allocate", [["gang", "nodeorder"]]))
    assert ssn.victim_job_filters("reclaimable") is not None
    ssn.add_reclaimable_fn("gang", lambda actor, cands: (cands, 1))
    ssn.add_node_order_fn("nodeorder", lambda t, table, mask: np.zeros(len(table)))
    assert ssn.victim_job_filters("reclaimable") is None
    assert ssn.companion("node_order", "nodeorder", "row_fn") is None
    assert declared(ssn, "gang") == {"job_order": {"key_fn"}, "preemptable": {"victim_job_filter"}}


# -- random worlds ----------------------------------------------------------------------------------
TAINTS = [{"key": GPU, "value": "present", "effect": "NoSchedule"},
          {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
          {"key": "old", "value": "", "effect": "PreferNoSchedule"}]


def _term(app: str) -> dict:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}


AFFINITIES = [
    None,
    {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}]}}},
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "podAffinityTerm": _term("web")}]}},
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("db")]}},
]
SPREADS = [[], [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                 "labelSelector": {"matchLabels": {"app": "web"}}}]]

node_specs = st.fixed_dictionaries({
    "cpu": st.sampled_from(["2", "4", "8"]), "memory": st.sampled_from(["4Gi", "8Gi"]),
    "pods": st.sampled_from([2, 110]), "gpu": st.sampled_from([None, "2"]),
    "labels": st.fixed_dictionaries({"zone": st.sampled_from(["a", "b"])},
                                    optional={"rack": st.sampled_from(["r1", "r2"])}),
    "taints": st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=str),
    "unschedulable": st.booleans(),
    "usage": st.sampled_from([None, {"cpu": 10.0, "memory": 90.0}, {"cpu": 70.0, "memory": 55.0}]),
})
task_specs = st.fixed_dictionaries({
    "resreq": st.sampled_from([("500m", "1Gi", None), ("1", "2Gi", None), ("2", "1Gi", "1"),
                               ("3", "3Gi", None)]),
    "node_selector": st.sampled_from([{}, {"zone": "a"}]),
    "tolerations": st.sampled_from([[], [{"key": "spot", "operator": "Exists"}],
                                    [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]]),
    "affinity": st.sampled_from(AFFINITIES),
    "topology_spread_constraints": st.sampled_from(SPREADS),
    "labels": st.sampled_from([{}, {"app": "web"}, {"app": "db"}]),
    "priority": st.sampled_from([0, 5, 100]),
    "on": st.integers(-2, 4),  # a node index when it runs there (modulo the node count), else Pending
    "alt": st.integers(-2, 4),  # the same in the other layout (static predicates)
})
job_specs = st.fixed_dictionaries({
    "queue": st.integers(0, 2), "priority": st.sampled_from([0, 10, 100]),
    "created": st.sampled_from([0.0, 1.0, 2.0]), "min_available": st.integers(1, 3),
    "sla": st.sampled_from([None, 60.0, 5000.0]), "phase": st.sampled_from(["Pending", "Inqueue"]),
    "tasks": st.lists(task_specs, min_size=1, max_size=3),
})
worlds = st.fixed_dictionaries({
    "nodes": st.lists(node_specs, min_size=1, max_size=4),
    "queues": st.lists(st.tuples(st.integers(1, 4), st.sampled_from([0, 5]), st.sampled_from([0.0, 1.0])),
                       min_size=3, max_size=3),
    "jobs": st.lists(job_specs, min_size=1, max_size=5),
    # (op, i, j): allocate / pipeline the i-th pending task on node j, or evict the i-th occupant.
    "moves": st.lists(st.tuples(st.sampled_from(["allocate", "pipeline", "evict"]), st.integers(0, 20),
                                st.integers(0, 3)), max_size=6),
})


def build(world: dict, name: str, option: dict, *, layout: str = "on", twins: bool = False) -> Session:
    """A session of the one plugin over the world; `layout` picks where tasks run; `twins` adds,
    for every job, a Pending copy in namespace "twin" (same sched_keys, other jobs)."""
    nodes = [node(f"n{i}", cpu=s["cpu"], memory=s["memory"], pods=s["pods"], gpu=s["gpu"],
                  labels=dict(s["labels"]), taints=list(s["taints"]),
                  unschedulable=s["unschedulable"] and i > 0,
                  usage=s["usage"], usage_time=NOW if s["usage"] else None)
             for i, s in enumerate(world["nodes"])]
    queues = [QueueInfo(name=f"q{i}", weight=w, priority=p, created=c)
              for i, (w, p, c) in enumerate(world["queues"])]
    jobs = []
    for namespace in ("ns", "twin") if twins else ("ns",):
        for j, spec in enumerate(world["jobs"]):
            tasks = []
            for k, ts in enumerate(spec["tasks"]):
                where = ts[layout] if namespace == "ns" else -1
                cpu, memory, gpu = ts["resreq"]
                running = where >= 0
                tasks.append(task(f"j{j}-{k}", cpu=cpu, memory=memory, gpu=gpu,
                                  status="Running" if running else "Pending",
                                  node=f"n{where % len(nodes)}" if running else None,
                                  node_selector=dict(ts["node_selector"]),
                                  tolerations=list(ts["tolerations"]),
                                  affinity=ts["affinity"], labels=dict(ts["labels"]), priority=ts["priority"],
                                  topology_spread_constraints=list(ts["topology_spread_constraints"]),
                                  created=float(k)))
            jobs.append(job(f"j{j}", queue=f"q{spec['queue']}", tasks=tasks, namespace=namespace,
                            min_available=min(spec["min_available"], len(tasks)), priority=spec["priority"],
                            created=spec["created"] + (namespace == "twin"), phase=spec["phase"],
                            sla_waiting_time=spec["sla"]))
    return open_session(snapshot(nodes=nodes, queues=queues, jobs=jobs, now=NOW),
                        conf("allocate", [[{"name": name, **option}]]))


def all_tasks(ssn: Session) -> list[TaskInfo]:
    """Every task of the session, by uid."""
    return sorted((t for jb in ssn.jobs.values() for t in jb.tasks.values()), key=lambda t: t.uid)


def move(ssn: Session, moves: list[tuple[str, int, int]]) -> None:
    """Apply the random placements and evictions (through the session, so plugins hear of them)."""
    for op, i, j in moves:
        tasks = all_tasks(ssn)
        if op == "evict":
            occupants = [t for t in tasks if t.status in OCCUPYING_STATUSES
                         and t.status is not TaskStatus.RELEASING]
            if occupants:
                ssn.evict(occupants[i % len(occupants)], "test")
            continue
        pending = [t for t in tasks if t.status is TaskStatus.PENDING]
        if pending:
            names = ssn.node_table.names
            getattr(ssn, op)(pending[i % len(pending)], names[j % len(names)])


def _fn(ssn: Session, kind: str, name: str) -> Any:
    [fn] = [fn for plugin, fn in ssn.enabled_fns(kind)[0] if plugin == name]
    return fn[0] if kind == "predicate" else fn


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def check_keys(ssn: Session, name: str, kind: str, key_fn: Any) -> None:
    """Over every pair of jobs (queues): comparing the keys has the sign of the order fn."""
    fn = _fn(ssn, kind, name)
    items = list(ssn.jobs.values()) if kind == "job_order" else list(ssn.queues.values())
    keys = [key_fn(x) for x in items]
    for a, ka in zip(items, keys, strict=True):
        for b, kb in zip(items, keys, strict=True):
            assert _sign(fn(a, b)) == (ka > kb) - (ka < kb), (kind, a, b, ka, kb)


def check_static_keys(ssn: Session, name: str, static_key_fn: Any) -> None:
    """Over the queues given: the key, when offered, orders every pair as fn then the fallback."""
    fn = _fn(ssn, "queue_order", name)
    holding = {jb.queue for jb in ssn.jobs.values()}
    for items in (list(ssn.queues.values()), [q for q in ssn.queues.values() if q.name in holding]):
        key = static_key_fn(items)
        if key is None:
            continue
        for a in items:
            for b in items:
                fa, fb = (a.created, a.name), (b.created, b.name)
                expected = _sign(fn(a, b)) or (fa > fb) - (fa < fb)
                ka, kb = (*key(a), a.created, a.name), (*key(b), b.created, b.name)
                assert expected == (ka > kb) - (ka < kb), (a.name, b.name, ka, kb)


def check_rows(ssn: Session, name: str, kind: str, row_fn: Any) -> None:
    """For every task and row: row_fn equals the fn's score of the row alone (mask and view)."""
    fn, table = _fn(ssn, kind, name), ssn.node_table
    n = len(table)
    for t in all_tasks(ssn):
        for row in range(n):
            alone = np.zeros(n, dtype=bool)
            alone[row] = True
            view = fn(t, table.view(np.array([row])), np.ones(1, dtype=bool))
            view_score = view[row if len(view) == n else 0]
            assert row_fn(t, row) == fn(t, table, alone)[row] == view_score, (t.uid, row)


def check_victims(ssn: Session, name: str, kind: str, keep: Any, order: list[int]) -> None:
    """Any actor, candidates in several orders and subsets: never abstains, never a refused job's task."""
    fn = _fn(ssn, kind, name)
    tasks = all_tasks(ssn)
    held = [t for t in tasks if t.status in OCCUPYING_STATUSES]
    shuffled = sorted(held, key=lambda t: order[tasks.index(t) % len(order)] if order else 0)
    for actor in tasks:
        for candidates in (held, shuffled, shuffled[::2]):
            victims, vote = fn(actor, candidates)
            assert vote != 0, (kind, actor.uid)
            refused = [v.uid for v in victims if not keep(ssn.jobs[v.job_uid])]
            assert refused == [], (kind, actor.uid)


def check_counts(ssn: Session, name: str, count_fn: Any, limit: int = 4) -> None:
    """For every task and its job's queue: count_fn equals allocatable asked before each copy."""
    fn = _fn(ssn, "allocatable", name)
    for t in all_tasks(ssn):
        queue = ssn.queues[ssn.jobs[t.job_uid].queue]
        expected = 0
        while expected < limit and fn(queue, t):
            ssn._fire(t, True)  # the plugin hears of one more copy
            expected += 1
        for _ in range(expected):
            ssn._fire(t, False)
        assert count_fn(queue, t, limit) == expected, t.uid


def static_answers(ssn: Session, name: str, namespace: str) -> dict[str, list]:
    """The static predicate's answer for every task of the namespace, by task name."""
    fn = _fn(ssn, "predicate", name)
    return {t.name: [(reason, mask.tolist()) for reason, mask in fn(t, ssn.node_table)]
            for jb in ssn.jobs.values() if jb.namespace == namespace for t in jb.tasks.values()}


@pytest.mark.parametrize(("name", "option"), CASES)
@settings(profiled(settings(max_examples=40)))
@given(world=worlds, order=st.lists(st.integers(0, 9), max_size=10))
def test_companions_agree_with_their_callbacks(name, option, world, order):
    ssn = build(world, name, option)
    companions = declared(ssn, name)
    assert companions  # the case was collected for them
    for moved in (False, True):
        if moved:
            move(ssn, world["moves"])
        for kind, keywords in companions.items():
            if "key_fn" in keywords:
                check_keys(ssn, name, kind, ssn.companion(kind, name, "key_fn"))
            if "static_key_fn" in keywords:
                check_static_keys(ssn, name, ssn.companion(kind, name, "static_key_fn"))
            if "row_fn" in keywords:
                check_rows(ssn, name, kind, ssn.companion(kind, name, "row_fn"))
            if "victim_job_filter" in keywords:
                check_victims(ssn, name, kind, ssn.companion(kind, name, "victim_job_filter"), order)
            if "count_fn" in keywords:
                check_counts(ssn, name, ssn.companion(kind, name, "count_fn"))
    if "static" in companions.get("predicate", set()):
        # The other layout, the twins (other jobs, same sched_keys), then the random moves.
        other = build(world, name, option, layout="alt", twins=True)
        move(other, world["moves"])
        assert static_answers(other, name, "twin") == static_answers(build(world, name, option), name, "ns")

"""Scenario loader: every error kind with its exact line, the format's defaults, JSON input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from scheduler_core.model import JobPhase, QueueState, TaskStatus
from scheduler_core.scenario import DEFAULT_EPOCH, ScenarioError, load_scenario

HEAD = """\
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: "8Gi"}}
queues:
  - {name: q}
"""  # 4 lines: snippets appended below start at line 5


def load(text: str, filename: str = "s.yaml"):
    return load_scenario(textwrap.dedent(text), filename=filename)


def error_of(text: str, filename: str = "s.yaml") -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load(text, filename)
    return info.value


JOB = "jobs:\n  - name: j\n    queue: q\n    tasks:\n"  # lines 5-8 after HEAD

ERROR_CASES = [
    # (id, text, line, message)
    ("unknown top key", "nodez: []\n", 1, "nodez: unknown key 'nodez'"),
    ("not a mapping", "- a\n- b\n", 1, "expected a mapping, got list"),
    ("yaml syntax", "nodes: []\n  queues: 2\njobs: []\n", 2, "YAML syntax error: did not find expected key"),
    ("duplicate yaml key", HEAD + "nodes: []\n", 5, "duplicate key 'nodes' (first on line 1)"),
    ("unknown node key", "nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    labelz: {}\n", 4,
     "nodes[0].labelz: unknown key 'labelz'"),
    ("missing allocatable", "nodes:\n  - name: n1\n    labels: {}\n", 2,
     "nodes[0]: missing required key 'allocatable'"),
    ("malformed quantity", "nodes:\n  - name: n1\n    allocatable:\n      cpu: 12x\n", 4,
     "nodes[0].allocatable.cpu: malformed quantity '12x'"),
    ("boolean quantity", "nodes:\n  - name: n1\n    allocatable:\n      memory: true\n", 4,
     "nodes[0].allocatable.memory: expected a quantity, got boolean"),
    ("negative request", HEAD + JOB + "      - name: t\n        request: {cpu: \"-1\"}\n", 10,
     "jobs[0].tasks[0].request.cpu: negative quantity '-1'"),
    ("duplicate node",
     "nodes:\n  - {name: n1, allocatable: {cpu: 1}}\n  - {name: n1, allocatable: {cpu: 1}}\n", 3,
     "nodes[1].name: duplicate node 'n1'"),
    ("bad taint effect", "nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    taints:\n"
     "      - {key: a, effect: Never}\n", 5, "nodes[0].taints[0].effect: invalid value 'Never'"),
    ("bad usage key", "nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    usage:\n      gpu: 3\n", 5,
     "nodes[0].usage.gpu: unknown key 'gpu'"),
    ("unschedulable string", "nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    unschedulable: 'yes'\n",
     4, "nodes[0].unschedulable: expected true or false, got string 'yes'"),
    ("labels not mapping", "nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    labels: [a]\n", 4,
     "nodes[0].labels: expected a mapping, got list"),
    ("duplicate queue", HEAD + "  - {name: q}\n", 5, "queues[1].name: duplicate queue 'q'"),
    ("bad queue state", HEAD + "  - name: r\n    state: Opened\n", 6,
     "queues[1].state: invalid value 'Opened' (expected one of: Open, Closed, Closing)"),
    ("weight string", HEAD + "  - name: r\n    weight: '2'\n", 6,
     "queues[1].weight: expected an integer, got string '2'"),
    ("weight zero", HEAD + "  - name: r\n    weight: 0\n", 6, "queues[1].weight: must be >= 1, got 0"),
    ("unknown parent", HEAD + "  - name: r\n    parent: nope\n", 6,
     "queues[1].parent: unknown parent queue 'nope'"),
    ("queue cycle", "queues:\n  - {name: a, parent: b}\n  - {name: b, parent: a}\n", 2,
     "queues[0].parent: queue cycle: a -> b -> a"),
    ("queue self parent", "queues:\n  - name: a\n    parent: a\n", 3,
     "queues[0].parent: queue cycle: a -> a"),
    ("root with parent", "queues:\n  - {name: x}\n  - name: root\n    parent: x\n", 4,
     "queues[1].parent: the root queue has no parent"),
    ("unknown queue", HEAD + "jobs:\n  - name: j\n    queue: nope\n", 7,
     "jobs[0].queue: unknown queue 'nope'"),
    ("default queue missing", HEAD + "jobs:\n  - name: j\n", 6, "jobs[0].queue: unknown queue 'default'"),
    ("duplicate job", HEAD + "jobs:\n  - {name: j, queue: q}\n  - {name: j, queue: q}\n", 7,
     "jobs[1].name: duplicate job 'default/j'"),
    ("bad phase", HEAD + "jobs:\n  - name: j\n    queue: q\n    phase: Runnin\n", 8,
     "jobs[0].phase: invalid value 'Runnin'"),
    ("bad duration", HEAD + "jobs:\n  - name: j\n    queue: q\n    sla_waiting_time: 1 hour\n", 8,
     "jobs[0].sla_waiting_time: invalid duration '1 hour'"),
    ("bad timestamp", HEAD + "jobs:\n  - name: j\n    queue: q\n    created: yesterday\n", 8,
     "jobs[0].created: invalid timestamp 'yesterday'"),
    ("unknown job priority class", HEAD + "jobs:\n  - name: j\n    queue: q\n    priority_class: gold\n", 8,
     "jobs[0].priority_class: unknown priority class 'gold'"),
    ("tasks not a list", HEAD + "jobs:\n  - name: j\n    queue: q\n    tasks: {a: 1}\n", 8,
     "jobs[0].tasks: expected a list, got mapping"),
    ("min_task_member negative", HEAD + "jobs:\n  - name: j\n    queue: q\n    min_task_member:\n"
     "      ps: -1\n", 9, "jobs[0].min_task_member.ps: expected a non-negative integer, got -1"),
    ("unknown task key", HEAD + JOB + "      - name: t\n        requets: {}\n", 10,
     "jobs[0].tasks[0].requets: unknown key 'requets'"),
    ("task without name", HEAD + JOB + "      - role: x\n", 9,
     "jobs[0].tasks[0]: missing required key 'name'"),
    ("unknown node", HEAD + JOB + "      - name: t\n        node: n9\n", 10,
     "jobs[0].tasks[0].node: unknown node 'n9'"),
    ("unknown nominated node", HEAD + JOB + "      - name: t\n        nominated_node: n9\n", 10,
     "jobs[0].tasks[0].nominated_node: unknown node 'n9'"),
    ("running without node", HEAD + JOB + "      - name: t\n        status: Running\n", 10,
     "jobs[0].tasks[0].status: a task in status Running needs a node"),
    ("bad task status", HEAD + JOB + "      - name: t\n        status: Done\n", 10,
     "jobs[0].tasks[0].status: invalid value 'Done'"),
    ("bad preemption policy", HEAD + JOB + "      - name: t\n        preemption_policy: Sometimes\n", 10,
     "jobs[0].tasks[0].preemption_policy: invalid value 'Sometimes'"),
    ("bad toleration operator", HEAD + JOB + "      - name: t\n        tolerations:\n"
     "          - {key: a, operator: Has}\n", 11,
     "jobs[0].tasks[0].tolerations[0].operator: invalid value 'Has'"),
    ("duplicate task",
     HEAD + JOB + "      - {name: t}\n  - name: k\n    queue: q\n    tasks:\n      - {name: t}\n", 13,
     "jobs[1].tasks[0].name: duplicate task 'default/t'"),
    ("priority class value", "priority_classes:\n  high: big\n", 2,
     "priority_classes.high: expected an integer or {value, preemption_policy}, got 'big'"),
    ("priority class key", "priority_classes:\n  high:\n    value: 1\n    policy: Never\n", 4,
     "priority_classes.high.policy: unknown key 'policy'"),
    ("duplicate namespace", "namespaces:\n  - {name: a}\n  - {name: a}\n", 3,
     "namespaces[1].name: duplicate namespace 'a'"),
    ("bad now", "now: later\n", 1, "now: invalid timestamp 'later'"),
    ("unknown plugin", "config:\n  actions: allocate\n  tiers:\n  - plugins:\n    - name: gang\n"
     "    - name: gangg\n", 6, "config: unknown plugin(s): gangg"),
    ("unknown plugin key", "config:\n  actions: allocate\n  tiers:\n  - plugins:\n    - name: gang\n"
     "      color: red\n", 6, "config: tiers[0].plugins[0] (gang): unknown key color"),
    ("unknown action", "config:\n  actions: allocate, plan\n  tiers: []\n", 2,
     "config: unknown action(s): plan"),
    ("configurations twice", "config:\n  actions: allocate\n  configurations: []\nconfigurations: []\n", 4,
     "configurations: given both at the top level and inside config:"),
    ("expect unknown key", HEAD + "expect:\n  bindz: {}\n", 6, "expect.bindz: unknown key 'bindz'"),
    ("expect unknown task", HEAD + "expect:\n  binds:\n    ns/t: n1\n", 7,
     "expect.binds.ns/t: unknown task 'ns/t'"),
    ("expect unknown queue", HEAD + "expect:\n  deserved:\n    zz: {cpu: 1}\n", 7,
     "expect.deserved.zz: unknown queue 'zz'"),
    ("expect bad quantity", HEAD + "expect:\n  allocated:\n    q: {cpu: lots}\n", 7,
     "expect.allocated.q.cpu: malformed quantity 'lots'"),
    ("expect bad count", HEAD + "expect:\n  bind_count: -2\n", 6, "expect.bind_count: must be >= 0, got -2"),
    ("expect share type", HEAD + "expect:\n  share:\n    q: high\n", 7, "expect.share.q: expected a number"),
]

EXPECT_JOB = HEAD + "jobs:\n  - name: j\n    namespace: ns\n    queue: q\n    tasks: [{name: t}]\n"
ERROR_CASES += [
    ("expect unknown node", EXPECT_JOB + "expect:\n  binds: {ns/t: n7}\n", 11,
     "expect.binds.ns/t: unknown node 'n7'"),
    ("expect bad code", EXPECT_JOB + "expect:\n  reason_code:\n    ns/j: Busy\n", 12,
     "expect.reason_code.ns/j: invalid reason code 'Busy'"),
    ("expect bad phase", EXPECT_JOB + "expect:\n  job_phase:\n    ns/j: Done\n", 12,
     "expect.job_phase.ns/j: invalid phase 'Done'"),
    ("expect unknown eviction", EXPECT_JOB + "expect:\n  evictions:\n    - ns/t\n    - ns/u\n", 13,
     "expect.evictions[1]: unknown task 'ns/u'"),
]


@pytest.mark.parametrize(("text", "line", "message"), [c[1:] for c in ERROR_CASES],
                         ids=[c[0] for c in ERROR_CASES])
def test_error_line_and_message(text: str, line: int, message: str) -> None:
    err = error_of(text)
    assert (err.filename, err.line) == ("s.yaml", line), err.message
    assert err.message.startswith(message), err.message
    assert str(err).startswith(f"s.yaml:{line}: {message}")


def test_json_errors_get_lines_through_the_yaml_reader() -> None:
    doc = '{\n  "nodes": [\n    {"name": "n1",\n     "allocatable": {"cpu": "x1"}}\n  ]\n}\n'
    err = error_of(doc, "c.json")
    assert (err.line, err.message) == (4, "nodes[0].allocatable.cpu: malformed quantity 'x1'")
    err = error_of('{\n  "nodes": [],\n  "nodes": []\n}\n', "c.json")
    assert (err.line, err.message) == (3, "duplicate key 'nodes' (first on line 2)")
    err = error_of('{\n  "nodes": [,]\n}\n', "c.json")
    assert err.line == 2 and err.message.startswith("JSON syntax error")


def test_empty_file_is_an_error() -> None:
    assert str(error_of("")) == "s.yaml: empty scenario"


def test_defaults_and_the_pending_with_node_rule() -> None:
    s = load(HEAD + JOB + """\
      - {name: a, request: {cpu: "1", memory: 1Gi}, node: n1}
      - {name: b, request: {cpu: 500m}}
""")
    snap = s.snapshot
    q = snap.queues["q"]
    assert (q.weight, q.state, q.reclaimable, q.parent) == (1, QueueState.OPEN, True, "root")
    assert "root" in snap.queues and snap.queues["root"].children == ["q"]
    job = snap.jobs["default/j"]
    assert (job.phase, job.min_available, job.namespace, job.priority, job.created) == (
        JobPhase.PENDING, 1, "default", 0, DEFAULT_EPOCH)
    a, b = snap.jobs["default/j"].tasks["default/a"], job.tasks["default/b"]
    assert (a.status, a.node_name) == (TaskStatus.BOUND, "n1")
    assert (b.status, b.node_name) == (TaskStatus.PENDING, None)
    node = snap.nodes["n1"]
    assert node.allocatable.max_task_num == 110  # Kubernetes' default when pods is not given
    assert (node.idle.milli_cpu, node.idle.memory) == (3000, 7 * 2**30)
    assert snap.now == DEFAULT_EPOCH + 3600
    assert s.conf.actions == ["enqueue", "allocate", "backfill"]  # no config: Volcano's default
    assert snap.namespaces["default"].used.milli_cpu == 1000  # occupying tasks only


def test_priorities_policies_and_preemptable_inheritance() -> None:
    s = load(HEAD + """\
priority_classes:
  high: {value: 1000, preemption_policy: Never}
  low: 10
jobs:
  - name: j
    queue: q
    priority_class: high
    preemptable: false
    tasks:
      - {name: inherit}
      - {name: own-class, priority_class: low}
      - {name: explicit, priority_class: low, priority: 7, preemptable: true}
""")
    job = s.snapshot.jobs["default/j"]
    t = job.tasks
    assert (job.priority, job.priority_class, job.preemptable) == (1000, "high", False)
    got = [(t[f"default/{n}"].priority, t[f"default/{n}"].preemption_policy, t[f"default/{n}"].preemptable)
           for n in ("inherit", "own-class", "explicit")]
    assert got == [(1000, "Never", False), (10, "PreemptLowerPriority", False),
                   (7, "PreemptLowerPriority", True)]
    pcs = s.snapshot.priority_classes
    assert (pcs["high"].value, pcs["high"].preemption_policy, pcs["low"].value) == (1000, "Never", 10)


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h", 3600.0), ("30m", 1800.0), ("90s", 90.0), ("1h30m", 5400.0), ("500ms", 0.5), ("45", 45.0)])
def test_sla_waiting_time(text: str, seconds: float) -> None:
    s = load(HEAD + f"jobs:\n  - {{name: j, queue: q, sla_waiting_time: {text}}}\n")
    assert s.snapshot.jobs["default/j"].sla_waiting_time == seconds


def test_created_timestamps_and_now() -> None:
    s = load(HEAD + """\
jobs:
  - {name: a, queue: q, created: 2026-03-01T10:00:00Z}
  - {name: b, queue: q, created: "2026-03-01T12:00:00+02:00"}
  - {name: c, queue: q, created: "2026-03-01 09:00:00"}
""")
    jobs = s.snapshot.jobs
    base = 1772359200.0  # 2026-03-01T10:00:00Z
    assert [jobs[f"default/{n}"].created for n in "abc"] == [base, base, base - 3600]
    assert s.snapshot.now == base + 3600  # latest creation + 1h
    explicit = load(HEAD + "now: 2026-03-02T00:00:00Z\n"
                    "jobs:\n  - {name: a, queue: q, created: 2026-03-01T10:00:00Z}\n")
    assert explicit.snapshot.now == base + 14 * 3600


def test_cluster_details() -> None:
    s = load("""\
config:
  actions: "enqueue, allocate"
  tiers: [{plugins: [{name: gang}]}]
configurations:
  - {name: allocate, arguments: {x: 1}}
namespaces:
  - {name: ns, quota: {cpu: "10"}, used: {cpu: "2"}}
nodes:
  - name: n1
    allocatable: {cpu: 1.5, memory: 2G, pods: 3, nvidia.com/gpu: 2}
    labels: {gpu: true, rack: 7}
    taints: [{key: k, effect: NoSchedule}]
    usage: {cpu: 35, memory: 50.5}
queues:
  - {name: root, deserved: {cpu: "1"}}
  - {name: p, weight: 3, priority: 2, state: Closing, reclaimable: false, annotations: {a: b}}
  - {name: c, parent: p, capability: {cpu: "1e3"}}
""")
    snap = s.snapshot
    n = snap.nodes["n1"]
    alloc = n.allocatable
    assert (alloc.milli_cpu, alloc.memory, alloc.scalars, alloc.max_task_num) == (
        1500, 2e9, {"nvidia.com/gpu": 2000}, 3)
    assert n.labels == {"gpu": "true", "rack": "7"}
    assert n.taints == [{"key": "k", "value": "", "effect": "NoSchedule"}]
    assert (n.usage, n.usage_time) == ({"cpu": 35.0, "memory": 50.5}, snap.now)
    assert snap.queues["root"].deserved.milli_cpu == 1000
    p, c = snap.queues["p"], snap.queues["c"]
    assert (p.weight, p.priority, p.state, p.reclaimable, p.annotations, p.children) == (
        3, 2, QueueState.CLOSING, False, {"a": "b"}, ["c"])
    assert (c.parent, c.capability.milli_cpu) == ("p", 1_000_000)
    assert (snap.namespaces["ns"].quota.milli_cpu, snap.namespaces["ns"].used.milli_cpu) == (10000, 2000)
    assert s.conf.configurations == {"allocate": {"x": 1}}


def test_task_scheduling_fields() -> None:
    s = load(HEAD + JOB + """\
      - name: t
        role: worker
        labels: {app: web}
        node_selector: {zone: a}
        tolerations: [{key: k, operator: Exists}]
        affinity: {nodeAffinity: {}}
        topology_spread_constraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]
        nominated_node: n1
""")
    t = s.snapshot.jobs["default/j"].tasks["default/t"]
    assert (t.role, t.labels, t.node_selector, t.tolerations, t.affinity, t.topology_spread_constraints,
            t.nominated_node, t.best_effort) == (
        "worker", {"app": "web"}, {"zone": "a"}, [{"operator": "Exists", "key": "k"}], {"nodeAffinity": {}},
        [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}], "n1", True)


def test_json_and_path_input(tmp_path: Path) -> None:
    doc = {"nodes": [{"name": "n1", "allocatable": {"cpu": "2"}}], "queues": [{"name": "q"}],
           "jobs": [{"name": "j", "queue": "q", "tasks": [{"name": "t", "request": {"cpu": "1"}}]}],
           "expect": {"binds": {"default/t": "n1"}}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    for s in (load_scenario(path), load_scenario(str(path))):
        assert s.source == str(path)
        assert list(s.snapshot.jobs["default/j"].tasks) == ["default/t"]
        assert s.expect is not None and s.expect.binds == {"default/t": "n1"}
    assert load_scenario(json.dumps(doc), filename="x.json").source == "x.json"


def test_expect_quantities_are_in_output_units() -> None:
    s = load(HEAD + "expect:\n  deserved: {q: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 2}}\n"
             "  share: {root: 1}\n")
    assert s.expect.figures == {"deserved": {"q": {"cpu": 0.5, "memory": 2.0**30, "nvidia.com/gpu": 2.0}}}
    assert s.expect.share == {"root": 1.0}
    assert s.expect.lines[("deserved", "q")] == 6


def test_expect_reason_codes_follow_the_reasons_module() -> None:
    from scheduler_core.explain.reasons import ReasonCode
    from scheduler_core.scenario_check import REASON_CODES

    assert set(REASON_CODES) == {c.value for c in ReasonCode}


def test_yaml_anchors_and_merge_keys() -> None:
    s = load("""\
nodes:
  - &big {name: n1, allocatable: {cpu: "8"}, labels: {size: big}}
  - <<: *big
    name: n2
""")
    assert [(n.name, n.labels, n.allocatable.milli_cpu) for n in s.snapshot.nodes.values()] == [
        ("n1", {"size": "big"}, 8000), ("n2", {"size": "big"}, 8000)]
    err = error_of("nodes:\n  - &a {name: n1, allocatable: {cpu: 1}}\n"
                   "  - <<: *a\n    name: n2\n    name: n3\n")
    assert (err.line, err.message) == (5, "duplicate key 'name' (first on line 4)")

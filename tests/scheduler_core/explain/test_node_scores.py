"""Issue 17 rule 9: the per-node, per-plugin scores of each placement try (explain.node_scores).

Scores are worked out by hand from the plugins' formulas (nodeorder: kube's integer arithmetic,
default weights leastrequested 1, balancedresource 1, tainttoleration 3 (300 on untainted
nodes); binpack: sum(weight * (used + request) / allocatable) / sum(weights) * 100 * weight).
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scheduler_core import __main__ as cli
from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.explain.node_scores import recording_scores, top_rows
from scheduler_core.framework.session import open_session
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
BINPACK = {"name": "binpack", "arguments": {"binpack.weight": 2, "binpack.cpu": 3, "binpack.memory": 1}}
SCORED = [["priority", "gang"], ["predicates", "nodeorder", BINPACK]]


def entry(name: str, total: float, pipelined: bool = False, **plugins: float) -> dict[str, Any]:
    return {"node": name, "total": total, "plugins": plugins, "pipelined": pipelined}


def three_nodes() -> Any:
    """n1 (4 CPU, 8Gi) runs 2 CPU / 2Gi; n2 (8 CPU, 8Gi), n3 (4 CPU, 4Gi) are empty; w1 asks 1 CPU / 2Gi."""
    busy = job("busy", tasks=[task("r1", cpu="2", memory="2Gi", status="Running", node="n1")],
               phase="Running", created=1.0)
    web = job("web", tasks=[task("w1", cpu="1", memory="2Gi")], created=2.0)
    return snapshot(nodes=[node("n1", cpu="4", memory="8Gi"), node("n2", cpu="8", memory="8Gi"),
                           node("n3", cpu="4", memory="4Gi")], jobs=[busy, web])


# nodeorder, binpack (cpu weight 3, memory 1, plugin weight 2: (3 cpu frac + mem frac) / 4 * 200):
# n1: cpu 3/4, mem 4/8 -> least (25 + 50) // 2 = 37, balanced 87 -> 424; binpack (2.25 + .5) / 4 * 200
# n2: cpu 1/8, mem 2/8 -> least (87 + 75) // 2 = 81, balanced 93 -> 474; binpack (.375 + .25) / 4 * 200
# n3: cpu 1/4, mem 2/4 -> least (75 + 50) // 2 = 62, balanced 87 -> 449; binpack (.75 + .5) / 4 * 200
N1 = entry("n1", 561.5, nodeorder=424.0, binpack=137.5)
N2 = entry("n2", 505.25, nodeorder=474.0, binpack=31.25)
N3 = entry("n3", 511.5, nodeorder=449.0, binpack=62.5)


def test_binpack_and_nodeorder_scores_by_hand() -> None:
    result = run_session(three_nodes(), conf("allocate", SCORED), record_scores=True)
    assert result.binds == {"ns/w1": "n1"}
    assert result.to_json()["node_scores"] == {"ns/w1": {
        "action": "allocate", "chosen": "n1", "pipelined": False, "top": [N1, N3, N2], "chosen_scores": N1}}


def test_session_breakdown_sums_to_node_scores() -> None:
    ssn = open_session(three_nodes(), conf("allocate", SCORED))
    t = ssn.jobs["ns/web"].tasks["ns/w1"]
    mask, rows = np.ones(3, dtype=bool), np.array([2, 0])
    parts = ssn.node_score_parts(t, mask, rows)
    assert {k: v.tolist() for k, v in parts.items()} == {"nodeorder": [449.0, 424.0],
                                                         "binpack": [62.5, 137.5]}
    assert (parts["nodeorder"] + parts["binpack"]).tolist() == ssn.node_scores(t, mask)[rows].tolist()


def test_session_breakdown_through_a_view_matches_the_full_table() -> None:
    # 8 nodes: a one-row mask (1 * 4 < 8) scores a NodeTable view, as node_scores does.
    snap = snapshot(nodes=[node(f"n{i}", cpu=str(2 + i)) for i in range(8)],
                    jobs=[job("j", tasks=[task("t")])])
    ssn = open_session(snap, conf("allocate", SCORED))
    t = ssn.jobs["ns/j"].tasks["ns/t"]
    one = np.zeros(8, dtype=bool)
    one[5] = True
    full = ssn.node_score_parts(t, np.ones(8, dtype=bool), np.array([5]))
    assert {k: v.tolist() for k, v in ssn.node_score_parts(t, one, np.array([5])).items()} == \
        {k: v.tolist() for k, v in full.items()}


@pytest.mark.parametrize(("record", "top"), [(True, ["a", "b", "c"]), (2, ["a", "b"]), (1, ["a"])])
def test_top_is_best_first_with_ties_by_name_and_cut_to_n(record: bool | int, top: list[str]) -> None:
    snap = snapshot(nodes=[node("c"), node("a"), node("b")], jobs=[job("j", tasks=[task("t")])])
    result = run_session(snap, conf("allocate", [["gang"], ["predicates", "nodeorder"]]),
                         record_scores=record)
    scores = result.node_scores["ns/t"]
    assert [e.node for e in scores.top] == top
    assert {e.total for e in scores.top} == {474.0}  # least (75 + 87) // 2 = 81, balanced 93 (93.75), 300
    assert scores.chosen == "a" and scores.chosen_scores == scores.top[0]


def test_idle_fits_rank_before_higher_scoring_future_fits() -> None:
    # mostrequested only: (cpu min(req, alloc) * 100 // alloc + memory likewise) // 2, with
    # req = used (Releasing included) + 2 CPU / 1Gi. n1: (50 + 12) // 2 = 31; n2 (8 CPU):
    # (25 + 12) // 2 = 18; n3 holds a Releasing 4 CPU / 1Gi task: (100 + 25) // 2 = 62, but only
    # its future idle fits (pipelining), so it ranks after every node where the idle fits.
    most = {"name": "nodeorder", "arguments": {"leastrequested.weight": 0, "balancedresource.weight": 0,
                                               "mostrequested.weight": 1, "tainttoleration.weight": 0}}
    old = job("old", tasks=[task("o1", cpu="4", memory="1Gi", status="Releasing", node="n3")],
              phase="Running")
    snap = snapshot(nodes=[node("n1"), node("n2", cpu="8"), node("n3")],
                    jobs=[old, job("j", tasks=[task("t", cpu="2", memory="1Gi")])])
    result = run_session(snap, conf("allocate", [["gang"], ["predicates", most]]), record_scores=True)
    assert result.to_json()["node_scores"]["ns/t"]["top"] == [
        entry("n1", 31.0, nodeorder=31.0), entry("n2", 18.0, nodeorder=18.0),
        entry("n3", 62.0, True, nodeorder=62.0)]


def test_a_pending_task_keeps_the_scores_of_its_last_try() -> None:
    # Gang of 3 x 4 CPU on two 4-CPU nodes: t1 sees both (399 each: least (0 + 87) // 2 = 43,
    # balanced 56, taints 300; tie -> n1), t2 only n2, t3 none; the round is discarded.
    train = job("train", min_available=3, tasks=[task(f"t{i}", cpu="4", memory="1Gi") for i in (1, 2, 3)])
    snap = snapshot(nodes=[node("n1"), node("n2")], jobs=[train])
    result = run_session(snap, conf("allocate", [["gang"], ["predicates", "nodeorder"]]), record_scores=True)
    assert result.binds == {}
    n1, n2 = entry("n1", 399.0, nodeorder=399.0), entry("n2", 399.0, nodeorder=399.0)
    pending = {"action": "allocate", "chosen": None, "pipelined": False, "chosen_scores": None}
    assert result.to_json()["node_scores"] == {"ns/t1": {**pending, "top": [n1, n2]},
                                               "ns/t2": {**pending, "top": [n2]},
                                               "ns/t3": {**pending, "top": []}}


def test_preempt_records_its_node_order_and_a_chosen_node_below_the_top() -> None:
    # m1 (2 CPU / 2Gi) is starving. n1 (8 CPU, 16Gi) is full of vip's tasks (higher priority:
    # never victims), n2 (4 CPU, 8Gi) of low's. Both score 399 before evictions (n1: least
    # (0 + 37) // 2 = 18, balanced 81; n2: (0 + 25) // 2 = 12, balanced 87; taints 300): n1 is
    # tried first (name), offers no victim, and m1 is pipelined on n2, ranked below a top of 1.
    vip = job("vip", tasks=[task(f"v{i}", status="Running", node="n1") for i in range(8)],
              phase="Running", priority=1000, created=1.0)
    low = job("low", tasks=[task(f"l{i}", status="Running", node="n2") for i in range(4)],
              phase="Running", priority=1, created=2.0)
    mid = job("mid", tasks=[task("m1", cpu="2", memory="2Gi")], priority=500, created=3.0)
    snap = snapshot(nodes=[node("n1", cpu="8", memory="16Gi"), node("n2")], jobs=[vip, low, mid])
    tiers = [["priority", "gang", "conformance"], ["predicates", "nodeorder"]]
    result = run_session(snap, conf("enqueue, allocate, preempt", tiers), record_scores=1)
    assert (result.evictions, result.pipelined) == (["ns/l3", "ns/l2"], {"ns/m1": "n2"})
    assert result.to_json()["node_scores"] == {"ns/m1": {
        "action": "preempt", "chosen": "n2", "pipelined": True,
        "top": [entry("n1", 399.0, True, nodeorder=399.0)],
        "chosen_scores": entry("n2", 399.0, True, nodeorder=399.0)}}


def test_reclaim_and_backfill_placements_are_recorded() -> None:
    # reclaim walks nodes by name (no ranking): no top, the node's scores as a1 lands, after
    # b3's eviction (Releasing still counts as used): least (0 + 37) // 2 = 18, balanced 81, 300.
    big = job("big", queue="q1", tasks=[task(f"b{i}", status="Running", node="n1") for i in range(4)],
              phase="Running", created=1.0)
    snap = snapshot(nodes=[node("n1")], queues=[queue("q1"), queue("q2")],
                    jobs=[big, job("small", queue="q2", tasks=[task("a1")], created=2.0)])
    tiers = [["priority", "gang", "conformance"], ["proportion", "predicates", "nodeorder"]]
    result = run_session(snap, conf("enqueue, allocate, reclaim", tiers), record_scores=True)
    assert (result.evictions, result.pipelined) == (["ns/b3"], {"ns/a1": "n1"})
    assert result.to_json()["node_scores"] == {"ns/a1": {
        "action": "reclaim", "chosen": "n1", "pipelined": True, "top": [],
        "chosen_scores": entry("n1", 399.0, True, nodeorder=399.0)}}
    # backfill: a best-effort task on two empty nodes: least 100, balanced 100, taints 300.
    best_effort = job("be", tasks=[task("e1", cpu=None, memory=None)])
    snap = snapshot(nodes=[node("n1"), node("n2")], jobs=[best_effort])
    result = run_session(snap, conf("enqueue, allocate, backfill", [["gang"], ["predicates", "nodeorder"]]),
                         record_scores=True)
    n1, n2 = entry("n1", 500.0, nodeorder=500.0), entry("n2", 500.0, nodeorder=500.0)
    assert result.to_json()["node_scores"] == {"ns/e1": {
        "action": "backfill", "chosen": "n1", "pipelined": False, "top": [n1, n2], "chosen_scores": n1}}


@pytest.mark.parametrize(("record", "ambient", "recorded"), [
    (None, None, None), (False, None, None), (0, None, None), (None, 2, 2), (False, 2, None), (1, 2, 1)])
def test_recording_is_opt_in(record: bool | int | None, ambient: int | None, recorded: int | None) -> None:
    def go() -> Any:
        return run_session(three_nodes(), conf("allocate", SCORED), record_scores=record)

    if ambient is None:
        result = go()
    else:
        with recording_scores(ambient):
            result = go()
    if recorded is None:
        assert result.node_scores is None and "node_scores" not in result.to_json()
    else:
        assert len(result.node_scores["ns/w1"].top) == recorded
    assert result.binds == {"ns/w1": "n1"}


@pytest.mark.parametrize(("scores", "k", "rows"), [
    ([5.0, 7.0, 7.0, 7.0, -np.inf, 9.0], 3, [5, 1, 2]),  # ties at the cut: names (rows) first
    ([5.0, 7.0, 7.0, 7.0, -np.inf, 9.0], 10, [5, 1, 2, 3, 0]),
    ([-np.inf, -np.inf], 3, []),
    ([1.0, 2.0], 0, []),
])
def test_top_rows(scores: list[float], k: int, rows: list[int]) -> None:
    assert top_rows(np.array(scores), k).tolist() == rows


def _digest(size: str, scenario: str, cycles: int, record: bool) -> tuple[str, int]:
    """scheduler_core.bench.decisions.digest with recording on or off (node_scores left out)."""
    world = build_world(size, scenario, 1)
    cfg = conf_of(world.spec)
    churn = Churn(world) if scenario == "steady" else None
    h, tried = hashlib.sha256(), 0
    for cycle in range(cycles):
        if churn is not None and cycle > 0:
            churn.step()
        result = run_session(to_snapshot(world.spec), cfg, record_scores=record)
        data = result.to_json()
        tried += len(data.pop("node_scores", {}))
        data.pop("timing")
        h.update(json.dumps(data, sort_keys=True, default=str).encode())
        if churn is not None:
            churn.apply(result)
    return h.hexdigest(), tried


@pytest.mark.parametrize(("size", "scenario", "cycles"), [
    ("S", "fill", 1), ("S", "steady", 4),
    pytest.param("M", "fill", 1, marks=pytest.mark.slow),
    pytest.param("M", "steady", 2, marks=pytest.mark.slow)])
def test_recording_changes_no_decision(size: str, scenario: str, cycles: int) -> None:
    off, none = _digest(size, scenario, cycles, False)
    on, tried = _digest(size, scenario, cycles, True)
    assert (on, none) == (off, 0) and tried > 0


def test_every_recorded_breakdown_adds_up_on_a_contended_cluster() -> None:
    world = build_world("S", "contention", 1)
    result = run_session(to_snapshot(world.spec), conf_of(world.spec), record_scores=True)
    actions: dict[str, int] = {}
    for uid, s in result.node_scores.items():
        actions[s.action] = actions.get(s.action, 0) + 1
        for e in [*s.top, *([s.chosen_scores] if s.chosen_scores else [])]:
            assert sum(e.plugins.values()) == pytest.approx(e.total, abs=1e-6), uid
        if s.action == "allocate" and s.chosen_scores is not None:
            assert s.top[0] == s.chosen_scores, uid  # allocate takes its best-ranked node
    placed = {**result.binds, **result.pipelined}
    assert all(result.node_scores[uid].chosen_scores.node == n for uid, n in placed.items())
    assert {"preempt", "reclaim"} <= set(actions)  # both place tasks on this cluster


# -- command line ---------------------------------------------------------------------------------

def simulate(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["simulate", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_json_has_node_scores() -> None:
    # The scenario file is three_nodes() in YAML: the same numbers.
    code, out, _ = simulate(str(SCENARIOS / "scores-binpack-nodeorder.yaml"), "--json")
    assert code == 0
    assert json.loads(out)["node_scores"] == {"shop/w1": {
        "action": "allocate", "chosen": "n1", "pipelined": False, "top": [N1, N3, N2], "chosen_scores": N1}}


def test_cli_no_scores_records_none() -> None:
    path = str(SCENARIOS / "scores-binpack-nodeorder.yaml")
    code, out, _ = simulate(path, "--json", "--no-scores")
    assert code == 0
    data = json.loads(out)
    assert "node_scores" not in data and data["binds"] == {"shop/w1": "n1"}
    assert simulate(path, "--check", "--no-scores")[0] == 0  # its node_scores expectations skipped
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(["simulate", path, "--scores", "--no-scores"])
    assert info.value.code == 2


def test_cli_scores_table() -> None:
    path = str(SCENARIOS / "scores-binpack-nodeorder.yaml")
    code, out, _ = simulate(path, "--scores", "2")
    assert code == 0
    assert out.splitlines()[-5:] == [
        "Node scores (1 task(s) tried; best first, * = chosen):",
        "  shop/w1 -> n1 [allocate]",
        "      NODE  TOTAL  nodeorder  binpack",
        "    * n1    561.5  424        137.5",
        "      n3    511.5  449        62.5",
    ]
    assert "Node scores" not in simulate(path)[1]
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(["simulate", path, "--scores", "0"])
    assert info.value.code == 2


@pytest.mark.parametrize("name", ["scores-binpack-nodeorder.yaml", "scores-gang-last-try.yaml"])
def test_cli_check_passes_on_the_scores_corpus(name: str) -> None:
    code, out, _ = simulate(str(SCENARIOS / name), "--check")
    assert code == 0 and out.startswith(f"{SCENARIOS / name}: ok (")


def test_cli_check_reports_score_mismatches(tmp_path: Path) -> None:
    text = (SCENARIOS / "scores-binpack-nodeorder.yaml").read_text()
    body, _ = text.split("expect:\n")
    path = tmp_path / "s.yaml"
    path.write_text(body + 'expect:\n  node_scores:\n    "shop/w1": {chosen: n3, top: [n1, n2]}\n'
                    '    "shop/r1": {top: []}\n')
    line = len(body.splitlines()) + 3
    code, out, _ = simulate(str(path), "--check")
    assert (code, out.splitlines()) == (1, [
        f"{path}:{line}: node_scores[shop/w1]: chosen: expected n3, got n1",
        f"{path}:{line}: node_scores[shop/w1]: top: expected ['n1', 'n2'] first, got ['n1', 'n3', 'n2']",
        f"{path}:{line + 1}: node_scores[shop/r1]: no scores recorded "
        "(the task was neither tried nor placed)",
        f"{path}: 3 mismatch(es) in 2 checks",
    ])


@pytest.mark.parametrize(("entry_text", "where", "message"), [
    ("{chosen: zz}", "expect.node_scores.shop/w1.chosen", "unknown node 'zz'"),
    ("{top: [n1, zz]}", "expect.node_scores.shop/w1.top[1]", "unknown node 'zz'"),
    ("{best: n1}", "expect.node_scores.shop/w1.best", "unknown key 'best' (allowed: chosen, top)"),
])
def test_cli_check_refuses_bad_score_expectations(tmp_path: Path, entry_text: str, where: str,
                                                  message: str) -> None:
    body = (SCENARIOS / "scores-binpack-nodeorder.yaml").read_text().split("expect:\n")[0]
    path = tmp_path / "s.yaml"
    path.write_text(body + f'expect:\n  node_scores:\n    "shop/w1": {entry_text}\n')
    code, out, err = simulate(str(path), "--check")
    assert (code, out) == (2, "")
    assert err == f"{path}:{len(body.splitlines()) + 3}: {where}: {message}\n"

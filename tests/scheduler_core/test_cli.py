"""`python -m scheduler_core simulate`: exit codes 0/1/2/3, output shapes, --check comparisons.

The scheduler is replaced by a stand-in result here, so these tests pin the CLI and the
comparison rules alone; tests/scheduler_core/test_scenario_corpus.py runs the real scheduler.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import scheduler_core.__main__ as cli
from scheduler_core.scenario import load_scenario
from scheduler_core.scenario_check import check_expect

REPO = Path(__file__).resolve().parents[2]

CLUSTER = """\
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: "8Gi"}}
  - {name: n2, allocatable: {cpu: "4", memory: "8Gi"}}
queues:
  - {name: q}
jobs:
  - name: j
    namespace: ns
    queue: q
    tasks: [{name: t1, request: {cpu: "1"}}, {name: t2, request: {cpu: "1"}}, {name: t3, request: {cpu: "1"}}]
  - name: k
    namespace: ns
    queue: q
    tasks: [{name: u1, request: {cpu: "1"}}]
"""  # 14 lines; `expect:` starts on line 15

RESULT: dict[str, Any] = {
    "binds": {"ns/t1": "n1", "ns/t2": "n2"},
    "pipelined": {"ns/t3": "n2"},
    "evictions": ["ns/u1"],
    "job_phase": {"ns/j": "Inqueue", "ns/k": "Running"},
    "queues": {"q": {"deserved": {"cpu": 4.0, "memory": 8589934592.0}, "allocated": {"cpu": 2.0},
                     "real_capability": {"cpu": 8.0, "memory": 17179869184.0}, "share": 0.91666}},
    "reasons": {"ns/j": {"code": "NodeFit", "message": "0/2 nodes are unavailable: 2 Insufficient cpu.",
                         "details": {}}},
    "warnings": ["children's deserved above the parent's"],
    "timing": {"parse_s": 0.001, "session_s": 0.002},
}


class FakeResult:
    """Stand-in for SessionResult: only to_json() is used by the CLI."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_json(self) -> dict[str, Any]:
        return self.data


@pytest.fixture
def fake_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "run_scenario", lambda scenario: FakeResult(RESULT))


def write(tmp_path: Path, expect: str = "", name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(CLUSTER + textwrap.dedent(expect))
    return str(path)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["simulate", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


MATCHING = """\
expect:
  binds: {ns/t1: n1, ns/u1: null}
  bind_count: 2
  evictions: [ns/u1]
  evict_count: 1
  pipelined: {ns/t3: n2, ns/t1: null}
  job_phase: {ns/j: Inqueue}
  deserved: {q: {cpu: "4.009", memory: 8Gi}}
  real_capability: {q: {cpu: "8", memory: "16777215Ki"}}
  allocated: {q: {cpu: 2, nvidia.com/gpu: 0}}
  share: {q: 0.917}
  reasons_contain: {ns/j: [Insufficient, cpu], ns/k: null}
  reason_code: {ns/j: NodeFit, ns/k: null}
"""


def test_check_all_matching_exits_0(tmp_path: Path, fake_scheduler: None) -> None:
    path = write(tmp_path, MATCHING)
    assert run(path, "--check") == (0, f"{path}: ok (16 checks)\n", "")


# (expect block, mismatch lines printed; line numbers count from the file start)
MISMATCHES = [
    ("expect:\n  binds: {ns/t1: n2, ns/t2: null}\n", [
        "16: binds[ns/t1]: expected n2, got n1", "16: binds[ns/t2]: expected not bound, got n2"]),
    ("expect:\n  bind_count: 3\n  evict_count: 0\n", [
        "16: bind_count: expected 3, got 2", "17: evict_count: expected 0, got 1"]),
    ("expect:\n  evictions: [ns/t3]\n", [
        "16: evictions: expected ['ns/t3'], got ['ns/u1'] (missing ['ns/t3'], unexpected ['ns/u1'])"]),
    ("expect:\n  pipelined:\n    ns/t1: n1\n", ["17: pipelined[ns/t1]: expected n1, got not pipelined"]),
    ("expect:\n  job_phase: {ns/j: Running}\n", ["16: job_phase[ns/j]: expected Running, got Inqueue"]),
    ("expect:\n  deserved: {q: {cpu: \"4.02\", memory: 8589935617}}\n", [
        "16: deserved[q]: cpu: expected 4.02, got 4",
        "16: deserved[q]: memory: expected 8589935617, got 8589934592"]),
    ("expect:\n  allocated: {root: {cpu: 1}}\n",
     ["16: allocated[root]: no allocated reported for queue root"]),
    ("expect:\n  share: {q: 0.916}\n", ["16: share[q]: expected 0.916, got 0.9167"]),
    ("expect:\n  reasons_contain: {ns/j: quota, ns/k: cpu}\n", [
        "16: reasons_contain[ns/j]: 'quota' not in '0/2 nodes are unavailable: 2 Insufficient cpu.'",
        "16: reasons_contain[ns/k]: expected a reason containing ['cpu'], got none"]),
    ("expect:\n  reason_code: {ns/j: GangUnschedulable, ns/k: NodeFit}\n", [
        "16: reason_code[ns/j]: expected GangUnschedulable, got NodeFit",
        "16: reason_code[ns/k]: expected NodeFit, got None"]),
]


@pytest.mark.parametrize(("expect", "lines"), MISMATCHES, ids=[m[0].split("\n")[1].split(":")[0].strip()
                                                               for m in MISMATCHES])
def test_check_mismatch_exits_1_and_prints_each(tmp_path: Path, fake_scheduler: None, expect: str,
                                                lines: list[str]) -> None:
    path = write(tmp_path, expect)
    code, out, err = run(path, "--check")
    printed = out.splitlines()
    assert (code, err) == (1, "")
    assert printed[:-1] == [f"{path}:{line}" for line in lines]
    assert printed[-1].startswith(f"{path}: {len(lines)} mismatch(es) in ")


def test_check_without_expect_block(tmp_path: Path, fake_scheduler: None) -> None:
    path = write(tmp_path)
    assert run(path, "--check") == (0, f"{path}: no expect: block, nothing to check\n", "")


def test_json_prints_the_result(tmp_path: Path, fake_scheduler: None) -> None:
    code, out, err = run(write(tmp_path), "--json")
    assert (code, err, json.loads(out)) == (0, "", RESULT)


def test_summary_shape(tmp_path: Path, fake_scheduler: None) -> None:
    path = write(tmp_path)
    code, out, err = run(path)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{path}: 2 nodes, 2 queues, 2 jobs, 4 tasks; actions: enqueue, allocate, backfill",
        "Binds (2):", "  ns/t1 -> n1", "  ns/t2 -> n2",
        "Pipelined (1):", "  ns/t3 -> n2",
        "Evictions (1):", "  ns/u1",
        "Job phases (2):", "  ns/j: Pending -> Inqueue", "  ns/k: Pending -> Running",
        "Queues (1):",
        "  q: share 0.917; allocated cpu 2; deserved cpu 4, memory 8Gi; real capability cpu 8, memory 16Gi",
        "Reasons (1):", "  ns/j: [NodeFit] 0/2 nodes are unavailable: 2 Insufficient cpu.",
        "Warnings (1):", "  children's deserved above the parent's",
        "Timing: parse 0.0010s, session 0.0020s",
    ]


def test_invalid_file_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, "expect:\n  binds: {ns/zz: n1}\n")
    assert run(path, "--check") == (2, "", f"{path}:16: expect.binds.ns/zz: unknown task 'ns/zz'\n")
    missing = str(tmp_path / "missing.yaml")
    code, out, err = run(missing)
    assert (code, out) == (2, "")
    assert err.startswith(f"{missing}: cannot read file: ")


def test_scheduler_failure_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(scenario: Any) -> Any:
        raise RuntimeError("kaput")

    monkeypatch.setattr(cli, "run_scenario", boom)
    code, out, err = run(write(tmp_path), "--json")
    assert (code, out) == (3, "")
    assert err.startswith(f"{tmp_path / 's.yaml'}: scheduler error\n") and "RuntimeError: kaput" in err


def test_json_and_check_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(["simulate", "x.yaml", "--json", "--check"])
    assert info.value.code == 2


def test_subprocess_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("nodes:\n  - name: n1\n    allocatable: {cpu: 4x}\n")
    proc = subprocess.run([sys.executable, "-m", "scheduler_core", "simulate", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"{path}:3: nodes[0].allocatable.cpu: malformed quantity '4x'\n")


@pytest.mark.parametrize(("want", "got", "ok"), [
    ({"cpu": 1.0}, {"cpu": 1.01}, True), ({"cpu": 1.0}, {"cpu": 1.011}, False),
    ({"memory": 1024.0}, {"memory": 2048.0}, True), ({"memory": 1024.0}, {"memory": 2049.0}, False),
    ({"nvidia.com/gpu": 2.0}, {}, False), ({"nvidia.com/gpu": 0.0}, {}, True)])
def test_resource_tolerances(want: dict[str, float], got: dict[str, float], ok: bool) -> None:
    scenario = load_scenario(CLUSTER + "expect:\n  allocated: {q: {cpu: 0}}\n", filename="t.yaml")
    assert scenario.expect is not None
    scenario.expect.figures["allocated"]["q"] = want
    problems, count = check_expect(scenario.expect, {"queues": {"q": {"allocated": got}}}, "t.yaml")
    assert (not problems, count) == (ok, 1)

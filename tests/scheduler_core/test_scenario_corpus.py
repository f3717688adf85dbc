"""Behavioural corpus: every scenario in tests/scenarios/ passes --check.

The corpus is the repository's own (the public example scenarios are kept there too). Each
file states its expected outcome (worked out by hand in its header comment) in `expect:`.
Two files go through a real `python -m scheduler_core simulate --check` subprocess; the rest
run in-process through the same load -> run -> check path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_core.scenario import load_scenario, run_scenario
from scheduler_core.scenario_check import check_expect

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "tests" / "scenarios"
SUBPROCESS = {"scoring-binpack.yaml", "gang-all-or-nothing.yaml"}


def corpus() -> list[Path]:
    return sorted(LOCAL.glob("*.yaml")) + sorted(LOCAL.glob("*.json"))


FILES = corpus()


def test_corpus_exists() -> None:
    assert len(list(LOCAL.glob("*.yaml"))) >= 39


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_local_scenarios_explain_themselves(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("# "), "header comment with the hand-computed outcome"
    assert load_scenario(path).expect is not None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_scenario_passes_check(path: Path) -> None:
    # Forecasts and node scores are computed by `simulate --check` only when the file asks for
    # them: such files go through the command, so their expectations are really checked.
    expect = load_scenario(path).expect
    if path.name in SUBPROCESS or (expect is not None and (expect.forecast or expect.node_scores)):
        proc = subprocess.run([sys.executable, "-m", "scheduler_core", "simulate", str(path), "--check"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith(f"{path}: ok (")
        return
    scenario = load_scenario(path)
    assert scenario.expect is not None
    problems, count = check_expect(scenario.expect, run_scenario(scenario).to_json(), str(path))
    assert problems == [], "\n".join(problems)
    assert count > 0

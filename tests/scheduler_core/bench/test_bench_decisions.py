"""scheduler_core.bench.decisions: one digest per case, stable across runs, changed by a decision."""

from __future__ import annotations

from scheduler_core.bench import decisions
from scheduler_core.bench.decisions import digest


def test_the_digest_is_deterministic_and_sees_a_different_cluster():
    first = digest("S", "steady", 2)
    assert digest("S", "steady", 2) == first
    assert digest("S", "steady", 2, seed=2) != first
    assert digest("S", "steady", 1) != first  # the second cycle's decisions count too


def test_the_command_line_names_its_cases(capsys):
    assert decisions.main(["S:backlog"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    name, value = line.split()
    assert name == "S:backlog" and value == digest("S", "backlog", 3)
    assert decisions.main(["S:nothing"]) == 2


def test_a_capacity_case_runs_the_hierarchical_queue_plugin():
    # The same cluster under another queue plugin: other figures and reasons, another digest.
    assert digest("S", "steady/capacity", 1) != digest("S", "steady", 1)
    assert decisions.main(["S:steady/capacity"]) == 0

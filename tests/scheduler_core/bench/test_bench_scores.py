"""session_bench's node-score recording comparison (`--compare-scores`): off and on alternate on
fresh snapshots of one world, decisions compared, the on/off CPU ratio per round."""

from __future__ import annotations

from scheduler_core.bench.session_bench import score_lines, score_overhead


def test_score_overhead_alternates_off_and_on_with_the_same_decisions() -> None:
    row = score_overhead("S", "fill", rounds=1)
    assert (row["size"], row["scenario"], row["same_decisions"]) == ("S", "fill", True)
    assert len(row["off_cpu_s"]) == len(row["on_cpu_s"]) == len(row["ratios"]) == 1


def test_score_lines_give_the_ratio_range() -> None:
    row = {"size": "M", "scenario": "fill", "off_cpu_s": [2.0, 2.5], "on_cpu_s": [2.1, 2.9],
           "ratios": [1.05, 1.16], "same_decisions": True}
    assert score_lines([row]).splitlines() == [
        "- M fill: on/off CPU 1.05-1.16x (off 2.0-2.5 s, on 2.1-2.9 s, 2 rounds); decisions identical"]
    assert score_lines([]) == ""

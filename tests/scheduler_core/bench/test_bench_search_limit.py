"""session_bench's feasible-node search limit comparison: the ratio lines it prints."""

from __future__ import annotations

from scheduler_core.bench.session_bench import NO_LIMIT, limit_ratios


def row(scenario: str, k: int, per_s: int, placed: float, cpu_ms: float) -> dict:
    return {"size": "L", "scenario": scenario, "nodes": 5000, "search_k": k, "placements_per_s": per_s,
            "placed_per_cycle": placed, "session_cpu_ms_p50": cpu_ms, "session_ms_p50": cpu_ms * 1.1}


def test_the_ratio_line_compares_the_limit_with_every_node(capsys):
    rows = [row("fill", 500, 20_000, 40_000.0, 2_000.0),
            row("fill" + NO_LIMIT, 5000, 10_000, 40_000.0, 4_000.0)]
    text = limit_ratios(rows, [("L", "fill")])
    assert text == ("- L fill: K = 500 of 5000 nodes: 20000 placements/s vs 10000 without the limit (2.00x); "
                    "per CPU second 20000 vs 10000 (2.00x); session p50 2200.0 vs 4400.0 ms\n")
    assert "Feasible-node search limit" in capsys.readouterr().out
    assert limit_ratios(rows, []) == ""

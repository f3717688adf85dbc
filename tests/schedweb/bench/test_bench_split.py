"""db_bench --split: a steady cycle's CPU split into what scales with the cluster and the change."""

from __future__ import annotations

from schedweb.bench.db_bench import split


def _row(rows: float, cpu: float) -> dict:
    return {"size": "L", "churn": 0.01, "task_rows_applied": rows, "cpu_ms_p50": cpu}


def test_the_line_through_the_two_churn_rates():
    got = split(_row(2000, 500.0), _row(200, 140.0))  # 0.2 ms a row, 100 ms with nothing changed
    assert got["fixed_ms"] == 100.0 and got["per_1k_rows_ms"] == 200.0
    assert got["change_ms"] == 400.0 and got["change_share"] == 0.8 and got["cpu_ratio"] == 3.57


def test_the_same_rows_twice_is_all_cluster():
    got = split(_row(100, 50.0), _row(100, 48.0))
    assert got["per_1k_rows_ms"] == 0.0 and got["fixed_ms"] == 50.0 and got["change_share"] == 0.0

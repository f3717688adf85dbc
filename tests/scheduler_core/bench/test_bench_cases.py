"""The benchmarks' case list (scheduler_core.bench.session_bench.selected_cases): sizes x scenarios,
then the extra pairs; an unknown or malformed case is a usage error before any case runs."""

from __future__ import annotations

import argparse

import pytest

from scheduler_core.bench.session_bench import selected_cases


@pytest.mark.parametrize(("sizes", "scenarios", "extra", "expected"), [
    ("S,M", "fill", "", [("S", "fill"), ("M", "fill")]),
    ("S", "fill,contention", "M:fill", [("S", "fill"), ("S", "contention"), ("M", "fill")]),
    ("", "", "S:fill,,M:contention", [("S", "fill"), ("M", "contention")]),
])
def test_cases(sizes: str, scenarios: str, extra: str, expected: list[tuple[str, str]]) -> None:
    assert selected_cases(argparse.ArgumentParser(), sizes, scenarios, extra) == expected


@pytest.mark.parametrize(("sizes", "extra", "message"), [
    ("XXL", "", "unknown case XXL:fill"),
    ("S", "S", "unknown case S:"),
    ("S", "S:nope", "unknown case S:nope"),
])
def test_bad_case_is_a_usage_error(capsys, sizes: str, extra: str, message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        selected_cases(argparse.ArgumentParser(prog="bench"), sizes, "fill", extra)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")

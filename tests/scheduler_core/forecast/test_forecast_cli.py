"""`simulate --forecast`, the `forecast:` expectation of --check, and the task `started:` /
`duration:` scenario fields (tests/scenarios/forecast-gang-two-queues.yaml: the gang starts at
now+900)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import scheduler_core.__main__ as cli
from scheduler_core.scenario import load_scenario
from scheduler_core.scenario_check import check_expect

REPO = Path(__file__).resolve().parents[3]
GANG = REPO / "tests" / "scenarios" / "forecast-gang-two-queues.yaml"
NOW = 1_767_229_200.0  # the file's now: 2026-01-01T01:00:00Z


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["simulate", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_check_computes_the_forecast_it_expects() -> None:
    assert _main(str(GANG), "--check") == (0, f"{GANG}: ok (3 checks)\n", "")


def test_json_forecast_key() -> None:
    code, out, _ = _main(str(GANG), "--json", "--forecast")
    assert code == 0
    assert json.loads(out)["forecast"] == {
        "default/g": {"estimated_start": NOW + 900, "estimate_basis": "declared", "start_in_s": 900.0}}


def test_json_without_forecast_has_no_key() -> None:
    code, out, _ = _main(str(GANG), "--json")
    assert code == 0 and "forecast" not in json.loads(out)


def test_summary_sentence() -> None:
    code, out, _ = _main(str(GANG), "--forecast")
    assert code == 0
    assert out.splitlines()[-3:] == [
        "Forecast (1 waiting):",
        "  default/g: expected to start in about 15 min, if running jobs end as declared",
        "  (3 cycles simulated up to +900s, period 2s; stopped: answered)"]


def _with_expect(tmp_path: Path, expect: str) -> Path:
    text = GANG.read_text(encoding="utf-8")
    head = text[: text.index("expect:")]
    path = tmp_path / "fc.yaml"
    path.write_text(head + expect, encoding="utf-8")
    return path


def test_forecast_mismatches_name_the_line(tmp_path: Path) -> None:
    path = _with_expect(tmp_path, "expect:\n  forecast:\n    default/g: {start_in_s: 600, basis: history}\n")
    line = len(path.read_text(encoding="utf-8").splitlines())
    code, out, _ = _main(str(path), "--check")
    assert code == 1
    assert out.splitlines() == [
        f"{path}:{line}: forecast[default/g]: start_in_s: expected 600.0, got 900.0",
        f"{path}:{line}: forecast[default/g]: basis: expected history, got declared",
        f"{path}: 2 mismatch(es) in 1 checks"]


def test_forecast_of_a_job_that_is_not_waiting(tmp_path: Path) -> None:
    path = _with_expect(tmp_path, "expect:\n  forecast:\n    default/ra: {start_in_s: null}\n")
    code, out, _ = _main(str(path), "--check")
    assert code == 1
    assert out.splitlines()[0].endswith("forecast[default/ra]: no forecast (the job was not waiting)")


@pytest.mark.parametrize(("expect", "message"), [
    ("  forecast:\n    default/g: {basis: soon}\n",
     "expect.forecast.default/g.basis: invalid value 'soon' (expected one of: declared, history, unknown, "
     "beyond_horizon, never)"),
    ("  forecast:\n    default/g: {start: 1}\n",
     "expect.forecast.default/g.start: unknown key 'start' (allowed: start_in_s, basis)"),
    ("  forecast:\n    default/nope: {start_in_s: 1}\n",
     "expect.forecast.default/nope: unknown job 'default/nope'"),
])
def test_bad_forecast_expectations_are_invalid(tmp_path: Path, expect: str, message: str) -> None:
    path = _with_expect(tmp_path, "expect:\n" + expect)
    code, _, err = _main(str(path), "--check")
    assert code == 2
    assert err.strip().endswith(message)


def test_without_a_forecast_in_the_result_the_section_is_not_compared() -> None:
    scenario = load_scenario(GANG)
    assert scenario.expect is not None and scenario.expect.forecast == {"default/g": {"start_in_s": 900.0,
                                                                                      "basis": "declared"}}
    assert check_expect(scenario.expect, {"binds": {}, "reasons": {}}, "f") == (
        ["f:51: reason_code[default/g]: expected NotEnqueued, got None"], 2)


def test_started_and_duration_are_read() -> None:
    snap = load_scenario(GANG).snapshot
    ra0, g0 = snap.jobs["default/ra"].tasks["default/ra-0"], snap.jobs["default/g"].tasks["default/g-0"]
    assert (ra0.started, ra0.duration) == (NOW - 3000, 3600.0)
    assert (g0.started, g0.duration) == (None, 3600.0)
    assert snap.jobs["default/rb"].tasks["default/rb-0"].duration == 1000.0


@pytest.mark.parametrize(("field", "value", "message"), [
    ("started", "yesterday",
     "started: invalid timestamp 'yesterday' (expected ISO-8601 like 2026-01-01T00:00:00Z)"),
    ("duration", "soon", "duration: invalid duration 'soon' (expected e.g. 1h, 30m, 90s)"),
])
def test_bad_started_or_duration(tmp_path: Path, field: str, value: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("nodes: [{name: n1, allocatable: {cpu: '1'}}]\nqueues: [{name: default}]\njobs:\n"
                    "  - name: j\n    tasks:\n"
                    f"      - {{name: t, request: {{cpu: '1'}}, {field}: {value}}}\n", encoding="utf-8")
    code, _, err = _main(str(path))
    assert code == 2
    assert err.strip() == f"{path}:6: jobs[0].tasks[0].{message}"

"""scripts/soak_summary.py on hand-made reports: the per-test table, the cycle-health row and the
exit status (no process is started: this runs in `make test`)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "soak_summary.py"
_spec = importlib.util.spec_from_file_location("soak_summary", SCRIPT)
soak_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(soak_summary)

LOAD = {"test": "tests/reliability/test_load.py::test_concurrent_clients_lose_nothing[soak]",
        "outcome": "passed", "faults_injected": 0, "faults_survived": 0, "requests": 5000, "bad_inputs": 0,
        "errors": 0, "lost": 0, "submitted": 900, "stored": 900, "load": [{"server_errors": 0}],
        "cycles_run": 120, "cycles_failed": 2, "cycles_failed_after_poison": 0}
RESTART = {"test": "tests/reliability/test_postgres_restart.py::test_postgres_restart_during_load[soak]",
           "outcome": "passed", "faults_injected": 3, "faults_survived": 3, "requests": 3000, "bad_inputs": 0,
           "errors": 0, "lost": 0, "submitted": 500, "stored": 500,
           "load": [{"server_errors": 0, "db_down_503": 12}]}
FUZZ = {"test": "schemathesis, whole API (max 12 examples per operation)", "outcome": "passed",
        "faults_injected": 0, "faults_survived": 0, "requests": 6000, "bad_inputs": 6000, "server_errors": 0,
        "errors": 0, "lost": 0, "submitted": 0, "stored": 0, "seed": 12345}
PROPERTIES = {"test": "property tests (hypothesis, 5x examples)", "outcome": "passed", "faults_injected": 0,
              "faults_survived": 0, "requests": 0, "bad_inputs": 21000, "server_errors": 0, "errors": 0,
              "lost": 0, "submitted": 0, "stored": 0}


def write(folder: Path, *reports: dict) -> Path:
    for i, report in enumerate(reports):
        (folder / f"r{i}.json").write_text(json.dumps(report))
    return folder


def test_health_row_and_clean_exit(tmp_path, capsys):
    assert soak_summary.main(["soak_summary", str(write(tmp_path, LOAD, RESTART, FUZZ, PROPERTIES))]) == 0
    lines = capsys.readouterr().out.splitlines()
    health = lines[lines.index(next(line for line in lines if line.startswith("health"))) + 2]
    assert health.split() == ["cycle", "health", "120", "2", "0", "3", "of", "3", "27000", "0", "0"]
    assert lines[-1] == "runs: 4 passed; lost: 0"


@pytest.mark.parametrize(("change", "expected"), [
    ({}, 0),
    ({"cycles_failed_after_poison": 1}, 1),  # the poison job stopped a cycle
    ({"load": [{"server_errors": 2}]}, 1),  # a 5xx other than the provoked database-down 503
    ({"lost": 1}, 1),
    ({"outcome": "failed"}, 1),
    ({"outcome": "xfailed"}, 0),  # a known bug, listed
])
def test_exit_status(tmp_path, change, expected, capsys):
    assert soak_summary.main(["soak_summary", str(write(tmp_path, {**LOAD, **change}, FUZZ))]) == expected


def test_server_errors_count_the_load_runs_and_the_fuzzer():
    assert soak_summary.server_errors({**FUZZ, "server_errors": 3, "load": [{"server_errors": 1}, {}]}) == 4
    assert soak_summary.server_errors(RESTART) == 0  # its 503s were the database down, on purpose


GANG_TEST = ("tests/reliability/test_affinity_gang.py::"
             "test_affinity_heavy_gang_does_not_stall_the_cycles[soak]")
GANG = {"test": GANG_TEST, "outcome": "passed",
        "quiet_cycles": 10, "quiet_p99_s": 0.02, "quiet_cpu_p99_s": 0.01,
        "baseline_cycles": 20, "baseline_p99_s": 0.2, "baseline_cpu_p99_s": 0.1,
        "loaded_cycles": 40, "loaded_p99_s": 0.3, "loaded_cpu_p99_s": 0.25}
BURST = {"test": "tests/reliability/test_request_bounds_soak.py::test_amplification[soak]",
         "outcome": "passed", "quiet_cycles": 5, "quiet_p99_s": 0.1, "quiet_cpu_p99_s": 0.05,
         "loaded_cycles": 9, "loaded_p99_s": 0.15, "loaded_cpu_p99_s": 0.075}


def test_cycle_cost_compares_with_the_baseline_when_there_is_one():
    gang, burst = soak_summary.cycle_cost_rows([GANG, BURST, LOAD])  # LOAD measured no windows
    # The gang's reference is the same load without it (0.2 s), not the idle cycles (0.02 s).
    assert gang[1:] == ["baseline", "200", "300", "1.50x", "100", "250", "2.50x"]
    assert burst[1:] == ["quiet", "100", "150", "1.50x", "50", "75", "1.50x"]
    lines = soak_summary.cycle_cost_table([GANG, BURST])
    assert lines[-1] == ("cycle p99 within 2x of its reference: missed by "
                         "test_affinity_gang::test_affinity_heavy_gang_does_not_stall_the_cycles[soak]")
    assert soak_summary.cycle_cost_table([BURST])[-1] == "cycle p99 within 2x of its reference: every run"
    assert soak_summary.cycle_cost_table([LOAD]) == []

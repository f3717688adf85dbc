"""scripts/prometheus_soak.py: the acceptance run of /metrics under a real Prometheus (issue 28).

The soak variant runs it for PROMETHEUS_SOAK_MINUTES (default 3; the acceptance figure is 10:
`.venv/bin/python scripts/prometheus_soak.py`); the fast tests check its verdicts' pieces.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "prometheus_soak.py"


def load_script():
    spec = importlib.util.spec_from_file_location("prometheus_soak", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("prometheus_soak", module)
    spec.loader.exec_module(module)
    return module


def test_a_counter_that_goes_down_anywhere_is_a_reset():
    soak = load_script()
    assert not soak._went_down([1.0, 1.0, 2.0, 5.0])
    assert soak._went_down([1.0, 3.0, 2.0, 5.0])
    assert not soak._went_down([])


@pytest.mark.parametrize("argv", [["--minutes", "0"], ["--port", "70000"], ["--minutes", "x"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        load_script().main(argv)
    assert stopped.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.soak
@pytest.mark.skipif(shutil.which("/usr/bin/prometheus") is None, reason="needs Debian's prometheus")
def test_prometheus_scrapes_the_demo_with_a_day_of_history(tmp_path):
    minutes = float(os.environ.get("PROMETHEUS_SOAK_MINUTES", "3"))
    code = load_script().main(["--minutes", str(minutes), "--dir", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0, summary
    assert summary["scrapes_over_100ms"] == 0 and summary["counter_resets"] == []

"""pytest plugin for `make soak` (`-p tests.reliability.soak_plugin`): counts what a random run
tried, into $SOAK_REPORT_DIR/$SOAK_REPORT_NAME.json for scripts/soak_summary.py.

- schemathesis (SOAK_REPORT_NAME=schemathesis, the default): every request it sent (each a
  generated, mostly bad, input) and how the API answered, with the run's seed (to replay it:
  SCHEMATHESIS_SEED=<seed>, see tests/schedweb/security/test_schemathesis.py);
- property tests (SOAK_REPORT_NAME=properties): every example Hypothesis ran (each call of a
  test's `hypothesis.inner_test`, which Hypothesis lets plugins wrap), under the soak profile
  of tests/conftest.py.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_counts: Counter = Counter()


def _counting(inner: Any) -> Any:
    @functools.wraps(inner)
    def run_example(*args: Any, **kwargs: Any) -> Any:
        _counts["examples"] += 1
        return inner(*args, **kwargs)

    run_example._soak_counted = True  # type: ignore[attr-defined]
    return run_example


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    """Count every example of every Hypothesis test (each call of its inner test)."""
    for item in items:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        inner = getattr(handle, "inner_test", None)
        if inner is not None and not getattr(inner, "_soak_counted", False):
            handle.inner_test = _counting(inner)


def pytest_configure(config: Any) -> None:
    """Wrap schemathesis' Case.call: every generated request passes through it."""
    from schemathesis import Case

    original = Case.call
    if getattr(original, "_soak_counted", False):
        return

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = original(self, *args, **kwargs)
        _counts["requests"] += 1
        _counts[f"{response.status_code // 100}xx"] += 1
        return response

    counted._soak_counted = True  # type: ignore[attr-defined]
    Case.call = counted


def _schemathesis_seed() -> int | None:
    module = sys.modules.get("tests.schedweb.security.test_schemathesis")
    return module.schema.config.seed if module is not None else None


def report(name: str, session: Any, exitstatus: int) -> dict:
    """The summary row of this run (see scripts/soak_summary.py for the keys)."""
    failed = exitstatus != 0
    common = {"outcome": "failed" if failed else "passed", "faults_injected": 0, "faults_survived": 0,
              "lost": 0, "submitted": 0, "stored": 0, "operations": session.testscollected,
              "hypothesis_profile": os.environ.get("HYPOTHESIS_PROFILE", "deterministic")}
    if name == "properties":
        factor = os.environ.get("SOAK_EXAMPLES_FACTOR", "5")
        return {**common, "test": f"property tests (hypothesis, {factor}x examples)",
                "requests": 0, "bad_inputs": _counts["examples"], "server_errors": 0,
                "errors": session.testsfailed}
    budget = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "8")
    return {**common, "test": f"schemathesis, whole API (max {budget} examples per operation)",
            "requests": _counts["requests"], "bad_inputs": _counts["requests"],
            "server_errors": _counts["5xx"], "errors": _counts["5xx"] + session.testsfailed,
            "statuses": {k: v for k, v in sorted(_counts.items()) if k.endswith("xx")},
            "seed": _schemathesis_seed()}


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Write the counts (nothing when SOAK_REPORT_DIR is unset)."""
    out_dir = os.environ.get("SOAK_REPORT_DIR")
    if not out_dir:
        return
    name = os.environ.get("SOAK_REPORT_NAME", "schemathesis")
    path = Path(out_dir) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report(name, session, int(exitstatus)), indent=2, sort_keys=True))

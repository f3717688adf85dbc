"""pytest plugin for `make soak` (`-p tests.reliability.soak_plugin`): counts the requests that
schemathesis sends (the bad inputs tried) and how the API answered, into
$SOAK_REPORT_DIR/schemathesis.json for scripts/soak_summary.py."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

_counts: Counter = Counter()


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


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Write the counts (nothing when SOAK_REPORT_DIR is unset)."""
    out_dir = os.environ.get("SOAK_REPORT_DIR")
    if not out_dir:
        return
    budget = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "8")
    report = {"test": f"schemathesis, whole API (max {budget} examples per operation)",
              "outcome": "passed" if exitstatus == 0 else "failed",
              "faults_injected": 0, "faults_survived": 0,
              "requests": _counts["requests"], "bad_inputs": _counts["requests"],
              "errors": _counts["5xx"] + session.testsfailed, "lost": 0, "submitted": 0, "stored": 0,
              "statuses": {k: v for k, v in sorted(_counts.items()) if k.endswith("xx")},
              "operations": session.testscollected}
    path = Path(out_dir) / "schemathesis.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=True))

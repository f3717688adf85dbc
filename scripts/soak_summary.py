#!/usr/bin/env python3
"""Print the `make soak` summary from the JSON reports the soak tests wrote (default var/soak/).

One row per test: outcome, faults injected and survived, requests sent, bad inputs tried,
errors, jobs submitted/stored and anything lost; then the totals. Exit 1 when something was lost
or a test failed (an xfailed test is a known bug, listed but not a failure of the run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = [("outcome", "outcome"), ("faults_injected", "faults"), ("faults_survived", "survived"),
           ("requests", "requests"), ("bad_inputs", "bad inputs"), ("errors", "errors"),
           ("submitted", "submitted"), ("stored", "stored"), ("lost", "lost")]
NUMERIC = [key for key, _ in COLUMNS[1:]]


def short_name(test: str) -> str:
    """tests/reliability/test_load.py::test_x[soak] -> test_load::test_x[soak]."""
    if "::" not in test:
        return test
    path, name = test.split("::", 1)
    return f"{Path(path).stem}::{name}"


def load_reports(folder: Path) -> list[dict]:
    """Every *.json report of the folder, sorted by test name."""
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return sorted(reports, key=lambda r: short_name(str(r.get("test", ""))))


def table(reports: list[dict]) -> list[str]:
    """The summary rows (fixed-width text)."""
    rows = [["test"] + [title for _, title in COLUMNS]]
    for report in reports:
        name = short_name(str(report.get("test", "?")))
        rows.append([name] + [str(report.get(key, 0)) for key, _ in COLUMNS])
    totals = {key: sum(int(r.get(key, 0) or 0) for r in reports) for key in NUMERIC}
    rows.append(["TOTAL", ""] + [str(totals[key]) for key in NUMERIC])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
        if i == 0 or i == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def main(argv: list[str]) -> int:
    """Print the table; 1 if a test failed or anything was lost."""
    folder = Path(argv[1]) if len(argv) > 1 else Path("var/soak")
    reports = load_reports(folder)
    if not reports:
        print(f"soak summary: no reports in {folder}/")
        return 1
    started = folder / "started"
    # From the start stamp to the last report written (the summary may be printed again later).
    finished = max(p.stat().st_mtime for p in folder.glob("*.json"))
    elapsed = f" in {finished - float(started.read_text()):.0f} s" if started.exists() else ""
    print(f"\nmake soak summary ({len(reports)} runs{elapsed}; reports in {folder}/)")
    print("\n".join(table(reports)))
    known = [r for r in reports if r.get("outcome") == "xfailed"]
    for report in known:
        facts = [f"{report.get('errors', 0)} errors"]
        if report.get("deadlock_503"):
            facts.append(f"{report['deadlock_503']} deadlock 503s")
        if report.get("statuses_during"):
            facts.append(f"answers while down {report['statuses_during']}")
        print(f"known bug (xfail): {short_name(str(report['test']))}: {', '.join(facts)}")
    lost = sum(int(r.get("lost", 0) or 0) for r in reports)
    failed = [r for r in reports if r.get("outcome") not in ("passed", "xfailed")]
    outcomes = [str(r.get("outcome", "error")) for r in reports]
    print("runs: " + ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
          + f"; lost: {lost}")
    return 1 if lost or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

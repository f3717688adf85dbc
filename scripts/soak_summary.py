#!/usr/bin/env python3
"""Print the `make soak` summary from the JSON reports the soak tests wrote (default var/soak/).

One row per test: outcome, faults injected and survived, requests sent, bad inputs tried, 5xx
answers (other than the database-down 503 a test provoked on purpose), errors, jobs
submitted/stored and anything lost; then the totals, and the health row: cycles run, cycles failed,
cycles failed after the poison job was stored (tests/reliability/load.py), faults survived, inputs
tried, 5xx and lost. Exit 1 when something was lost, a 5xx was answered, a cycle failed after the
poison job, or a test failed (an xfailed test is a known bug, listed but not a failure of the run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = [("outcome", "outcome"), ("faults_injected", "faults"), ("faults_survived", "survived"),
           ("requests", "requests"), ("bad_inputs", "bad inputs"), ("5xx", "5xx"), ("errors", "errors"),
           ("submitted", "submitted"), ("stored", "stored"), ("lost", "lost")]
NUMERIC = [key for key, _ in COLUMNS[1:]]
CYCLES = [("cycles_run", "cycles run"), ("cycles_failed", "cycles failed"),
          ("cycles_failed_after_poison", "failed after poison")]


def short_name(test: str) -> str:
    """tests/reliability/test_load.py::test_x[soak] -> test_load::test_x[soak]."""
    if "::" not in test:
        return test
    path, name = test.split("::", 1)
    return f"{Path(path).stem}::{name}"


def server_errors(report: dict) -> int:
    """5xx answers a report counted: its own (schemathesis) plus its load runs' (other than the
    database-down 503s that a test provoked on purpose)."""
    own = int(report.get("server_errors", 0) or 0)
    return own + sum(int(run.get("server_errors", 0) or 0) for run in report.get("load", []))


def load_reports(folder: Path) -> list[dict]:
    """Every *.json report of the folder, sorted by test name, with its 5xx count as "5xx"."""
    reports = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    for report in reports:
        report["5xx"] = server_errors(report)
    return sorted(reports, key=lambda r: short_name(str(r.get("test", ""))))


def _total(reports: list[dict], key: str) -> int:
    return sum(int(r.get(key, 0) or 0) for r in reports)


def _format(rows: list[list[str]], rules_after: tuple[int, ...]) -> list[str]:
    """Fixed-width text: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
        if i in rules_after:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def table(reports: list[dict]) -> list[str]:
    """The summary rows (fixed-width text)."""
    rows = [["test"] + [title for _, title in COLUMNS]]
    for report in reports:
        name = short_name(str(report.get("test", "?")))
        rows.append([name] + [str(report.get(key, 0)) for key, _ in COLUMNS])
    rows.append(["TOTAL", ""] + [str(_total(reports, key)) for key in NUMERIC])
    return _format(rows, (0, len(rows) - 2))


def health(reports: list[dict]) -> dict[str, int]:
    """The run's health figures: cycles (from the tests that counted them), faults, inputs, 5xx, lost."""
    figures = {key: _total(reports, key) for key, _ in CYCLES}
    figures.update({"faults_injected": _total(reports, "faults_injected"),
                    "faults_survived": _total(reports, "faults_survived"),
                    "inputs": _total(reports, "bad_inputs"), "5xx": _total(reports, "5xx"),
                    "lost": _total(reports, "lost")})
    return figures


def health_table(figures: dict[str, int]) -> list[str]:
    """The cycle-health row under its titles."""
    titles = ["health"] + [title for _, title in CYCLES] + ["faults survived", "inputs tried", "5xx", "lost"]
    values = (["cycle health"] + [str(figures[key]) for key, _ in CYCLES]
              + [f"{figures['faults_survived']} of {figures['faults_injected']}", str(figures["inputs"]),
                 str(figures["5xx"]), str(figures["lost"])])
    return _format([titles, values], (0,))


COST_BAR = 2.0  # issue 33: under the reproductions, cycle p99 within 2x of its quiet p99


def cycle_cost_rows(reports: list[dict]) -> list[list[str]]:
    """One row per report that measured its cycles under load: the reference window (the same
    load without the hostile input, `baseline`, where the test ran one; else the `quiet` cycles
    before it), both p99s and their ratio, wall and CPU (`*_cpu_p99_s`: the scheduler's CPU in
    the cycle, which the other processes on the machine's cores do not inflate)."""
    rows = []
    for report in reports:
        if "loaded_p99_s" not in report:
            continue
        ref = "baseline" if "baseline_p99_s" in report else "quiet"
        cells = [short_name(str(report.get("test", "?"))), ref]
        for suffix in ("p99_s", "cpu_p99_s"):
            before, after = report.get(f"{ref}_{suffix}"), report.get(f"loaded_{suffix}")
            if before is None or after is None:
                cells += ["-", "-", "-"]
                continue
            ratio = f"{after / before:.2f}x" if before > 0 else "-"
            cells += [f"{before * 1e3:.0f}", f"{after * 1e3:.0f}", ratio]
        rows.append(cells)
    return rows


def cycle_cost_table(reports: list[dict]) -> list[str]:
    """The cycle-cost table (empty when no report measured it)."""
    rows = cycle_cost_rows(reports)
    if not rows:
        return []
    titles = ["cycle cost", "reference", "ref p99 ms", "loaded p99 ms", "wall", "ref CPU p99 ms",
              "loaded CPU p99 ms", "CPU"]
    lines = _format([titles] + rows, (0,))
    over = [row[0] for row in rows
            if any(c.endswith("x") and float(c[:-1]) > COST_BAR for c in (row[4], row[7]))]
    lines.append(f"cycle p99 within {COST_BAR:g}x of its reference: "
                 + (f"missed by {', '.join(over)}" if over else "every run"))
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
    figures = health(reports)
    print()
    print("\n".join(health_table(figures)))
    if cost := cycle_cost_table(reports):
        print()
        print("\n".join(cost))
    known = [r for r in reports if r.get("outcome") == "xfailed"]
    for report in known:
        facts = [f"{report.get('errors', 0)} errors"]
        if report.get("deadlock_503"):
            facts.append(f"{report['deadlock_503']} deadlock 503s")
        if report.get("statuses_during"):
            facts.append(f"answers while down {report['statuses_during']}")
        print(f"known bug (xfail): {short_name(str(report['test']))}: {', '.join(facts)}")
    failed = [r for r in reports if r.get("outcome") not in ("passed", "xfailed")]
    outcomes = [str(r.get("outcome", "error")) for r in reports]
    print("runs: " + ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
          + f"; lost: {figures['lost']}")
    bad = figures["lost"] or figures["5xx"] or figures["cycles_failed_after_poison"]
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

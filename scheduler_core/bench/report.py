"""Output helpers shared by the benchmarks: the machine line, a text table, JSON files."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """What ran the benchmark: host, CPU model and count, Python, date (UTC)."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu,
            "cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()}


def format_table(columns: list[tuple[str, str]], rows: list[dict[str, Any]]) -> str:
    """A Markdown table (readable as plain text too) of `rows` by (title, key) columns."""
    head = [t for t, _ in columns]
    body = [[_cell(r.get(k)) for _, k in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for b in body:
        lines.append("| " + " | ".join(c.rjust(w) for c, w in zip(b, widths, strict=True)) + " |")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def print_table(title: str, columns: list[tuple[str, str]], rows: list[dict[str, Any]]) -> str:
    """Title, machine line and table on stdout; returns the same text (Markdown)."""
    m = machine()
    text = (f"### {title}\n\n{m['date']}, {m['cpu']} x{m['cpus']}, Python {m['python']}\n\n"
            + format_table(columns, rows) + "\n")
    print("\n" + text)
    return text


def write_json(directory: Path, kind: str, payload: dict[str, Any], table: str = "") -> Path:
    """Write `<kind>-<timestamp>.json`, `<kind>-latest.json` (and `<kind>-latest.md`, the table)."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(payload, indent=2, sort_keys=True)
    path = directory / f"{kind}-{stamp}.json"
    path.write_text(text + "\n", encoding="utf-8")
    (directory / f"{kind}-latest.json").write_text(text + "\n", encoding="utf-8")
    if table:
        (directory / f"{kind}-latest.md").write_text(table, encoding="utf-8")
    return path


# (bench kind, row filter, figure, limit, "max" = at most / "min" = at least): the targets.
TARGETS: list[tuple[str, dict[str, Any], str, float, str]] = [
    ("session", {"size": "M", "scenario": "fill"}, "placements_per_s", 50_000, "min"),
    ("db", {"size": "S", "scenario": "steady"}, "cycle_ms_p99", 100, "max"),
    ("db", {"size": "M", "scenario": "steady"}, "cycle_ms_p99", 150, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "cycle_ms_p99", 500, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "load_ms_p99", 60, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "schedule_ms_p99", 250, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "write_ms_p99", 150, "max"),
    ("db", {"size": "L", "scenario": "fill"}, "cycle_ms_p99", 3000, "max"),
    ("db", {"size": "L", "scenario": "steady"}, "cycle_ms_p99", 500, "max"),
    ("db", {"size": "L", "scenario": "steady"}, "p99_per_period", 0.25, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "placements_per_s", 20_000, "min"),
    ("db", {"size": "M", "scenario": "fill"}, "load_vs_select", 3, "max"),
    ("db", {"size": "M", "scenario": "fill"}, "write_vs_copy", 3, "max"),
    ("db", {"size": "M", "scenario": "steady"}, "load_vs_select", 3, "max"),
    ("db", {"size": "M", "scenario": "steady"}, "write_vs_copy", 3, "max"),
    ("api", {"endpoint": "queue tree", "clients": 16}, "p99_ms", 50, "max"),
    ("api", {"endpoint": "pending jobs", "clients": 64}, "p99_ms", 100, "max"),
]


def check_targets(kind: str, rows: list[dict[str, Any]]) -> str:
    """One line per target of this bench found in `rows`: figure, limit, met / MISSED."""
    lines = []
    for k, where, figure, limit, op in TARGETS:
        if k != kind:
            continue
        for row in rows:
            if all(row.get(f) == v for f, v in where.items()) and row.get(figure) is not None:
                value = row[figure]
                ok = value >= limit if op == "min" else value <= limit
                name = " ".join(str(v) for v in where.values())
                sign = ">=" if op == "min" else "<="
                lines.append(f"- {name} {figure} = {_cell(value)} (target {sign} {_cell(limit)}): "
                             f"{'met' if ok else 'MISSED'}")
    text = "\n".join(lines)
    if text:
        print("\nTargets:\n" + text)
    return text + "\n" if text else ""

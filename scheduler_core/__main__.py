"""Command line: `python -m scheduler_core simulate FILE [--json | --check] [--forecast]
[--scores [N] | --no-scores]`.

Runs one scheduling session on a scenario file (scenario-format.md); --json includes each tried
task's per-node scores (`node_scores`), --scores prints them as tables, --no-scores records none
(bulk what-if runs: --json then has no node_scores, --check skips their expectations). Exit codes: 0 success
(and, with --check, every expectation met), 1 some expectation not met (each printed),
2 the file is invalid (`FILE:LINE: what is wrong`), 3 the scheduler itself failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from scheduler_core.explain.node_scores import DEFAULT_TOP, expected_top, recording_scores, score_lines
from scheduler_core.scenario import Scenario, ScenarioError, load_scenario, run_scenario
from scheduler_core.scenario_check import check_expect

EXIT_OK, EXIT_MISMATCH, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 3
SUMMARY_ROWS = 50
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_quantity(dim: str, value: float) -> str:
    """Readable quantity: cpu in cores, memory with a binary suffix when exact, else as is."""
    if dim == "memory" and value:
        for suffix, size in _BINARY:
            if value >= size and float(value / size).is_integer():
                return f"{int(value // size)}{suffix}"
        for suffix, size in (("G", 1e9), ("M", 1e6)):
            if value >= size:
                return f"{value / size:.4g}{suffix}"
    return f"{value:.6g}"


def format_resources(res: dict[str, float] | None) -> str:
    """`cpu 4, memory 8Gi, nvidia.com/gpu 2` (a dash for unset)."""
    if res is None:
        return "-"
    if not res:
        return "0"
    return ", ".join(f"{dim} {format_quantity(dim, v)}" for dim, v in res.items())


def reason_rows(reasons: dict[str, Any]) -> list[str]:
    """One line per job: jobs that can never run (NeverFits, with its kind) first, then by uid."""
    rows = []
    for job, r in sorted(reasons.items(), key=lambda kv: (kv[1].get("code") != "NeverFits", kv[0])):
        kind = (r.get("details") or {}).get("kind") if r.get("code") == "NeverFits" else None
        code = f"{r.get('code')}: {kind}" if kind else r.get("code")
        rows.append(f"{job}: [{code}] {r.get('message')}")
    return rows


def summary(scenario: Scenario, out: dict[str, Any], phases_before: dict[str, str]) -> str:
    """The human-readable report of one session."""
    snap = scenario.snapshot
    n_tasks = sum(len(j.tasks) for j in snap.jobs.values())
    lines = [f"{scenario.source}: {len(snap.nodes)} nodes, {len(snap.queues)} queues, "
             f"{len(snap.jobs)} jobs, {n_tasks} tasks; actions: {', '.join(scenario.conf.actions)}"]
    shard = out.get("sharding")
    if shard is not None:
        outside = shard.get("placed_outside_shard")
        size = len(shard["nodes_in_shard"])
        lines.append(f"Sharding: mode {shard['mode']}, shard {shard['shard_name'] or '(unnamed)'} "
                     f"({size} node{'' if size == 1 else 's'})"
                     + (f", {len(outside)} placed outside it" if outside is not None else ""))

    def section(title: str, rows: list[str]) -> None:
        lines.append(f"{title} ({len(rows)}):" if rows else f"{title}: none")
        lines.extend(f"  {row}" for row in rows[:SUMMARY_ROWS])
        if len(rows) > SUMMARY_ROWS:  # big clusters: --json has everything
            lines.append(f"  ... {len(rows) - SUMMARY_ROWS} more (use --json for all)")

    section("Binds", [f"{t} -> {n}" for t, n in out.get("binds", {}).items()])
    section("Pipelined", [f"{t} -> {n}" for t, n in out.get("pipelined", {}).items()])
    section("Evictions", list(out.get("evictions", [])))
    section("Job phases", [f"{j}: {phases_before.get(j, '?')} -> {p}" if phases_before.get(j) != p
                           else f"{j}: {p}" for j, p in out.get("job_phase", {}).items()])
    queue_rows = []
    for name, q in out.get("queues", {}).items():
        queue_rows.append(f"{name}: share {q.get('share', 0):.3f}"
                          f"; allocated {format_resources(q.get('allocated'))}"
                          f"; deserved {format_resources(q.get('deserved'))}"
                          f"; real capability {format_resources(q.get('real_capability'))}")
    section("Queues", queue_rows)
    section("Reasons", reason_rows(out.get("reasons", {})))
    if out.get("conditions"):
        # Waiting jobs only: a Scheduled condition on every running job says nothing new.
        section("Unschedulable conditions", [f"{job}: {c[-1]['reason']}: {c[-1]['message']}"
                                             for job, c in out["conditions"].items()
                                             if c and c[-1]["type"] == "Unschedulable"])
    section("Warnings", list(out.get("warnings", [])))
    lines.append("Timing: " + timing_line(out.get("timing", {})))
    return "\n".join(lines)


def timing_line(timing: dict[str, float]) -> str:
    """Session, parse, screen and per-action seconds; the plugins' open/close seconds summed into
    one `plugins` entry (the full per-plugin breakdown is in --json)."""
    plugins = sum(v for k, v in timing.items() if k.startswith("plugin_"))
    parts = [f"{k.removesuffix('_s')} {v:.4f}s" for k, v in timing.items() if not k.startswith("plugin_")]
    if plugins:
        parts.append(f"plugins {plugins:.4f}s")
    return ", ".join(parts)


def simulate(path: str, mode: str, stdout: TextIO, stderr: TextIO, with_forecast: bool = False,
             scores: int = 0, no_scores: bool = False) -> int:
    """Load, run and report one scenario; returns the exit code. `with_forecast` adds each waiting
    job's estimated start (scheduler_core.forecast; also when --check expects a forecast).
    `scores` > 0: the summary adds each tried task's top `scores` nodes with their per-plugin
    scores (scheduler_core.explain.node_scores); --json always records the top 10, --check when the
    expect: block has node_scores; `no_scores` records none at all."""
    try:
        if path == "-":
            scenario = load_scenario(sys.stdin.read(), filename="<stdin>")
        else:
            scenario = load_scenario(Path(path), filename=path)
    except ScenarioError as exc:
        print(str(exc), file=stderr)
        return EXIT_INVALID
    if mode == "check" and scenario.expect is None:
        print(f"{scenario.source}: no expect: block, nothing to check", file=stdout)
        return EXIT_OK
    phases_before = {uid: job.phase.value for uid, job in scenario.snapshot.jobs.items()}
    fc = None
    try:
        if with_forecast or (mode == "check" and scenario.expect is not None and scenario.expect.forecast):
            from scheduler_core.forecast import forecast

            shardings = (scenario.sharding,) if scenario.sharding is not None else ()
            # On a copy: the session runs next. A scenario is one instance: its shard, its jobs.
            fc = forecast(scenario.snapshot, scenario.conf, shardings=shardings)
        with recording_scores(0 if no_scores else _scores_to_record(mode, scenario, scores)):
            result = run_scenario(scenario)
        out = result.to_json()
        if fc is not None:
            out["forecast"] = fc.to_json()
    except Exception:  # the scheduler's own failure, not the file's: show where it happened
        print(f"{scenario.source}: scheduler error", file=stderr)
        traceback.print_exc(file=stderr)
        return EXIT_INTERNAL
    if mode == "json":
        print(json.dumps(out, indent=2, default=str), file=stdout)
        return EXIT_OK
    if mode == "check":
        assert scenario.expect is not None
        problems, count = check_expect(scenario.expect, out, scenario.source)
        for problem in problems:
            print(problem, file=stdout)
        if problems:
            print(f"{scenario.source}: {len(problems)} mismatch(es) in {count} checks", file=stdout)
            return EXIT_MISMATCH
        print(f"{scenario.source}: ok ({count} checks)", file=stdout)
        return EXIT_OK
    print(summary(scenario, out, phases_before), file=stdout)
    if scores and "node_scores" in out:
        print("\n".join(score_lines(out["node_scores"], SUMMARY_ROWS)), file=stdout)
    if fc is not None:
        from scheduler_core.forecast.types import summary_lines

        print("\n".join(summary_lines(fc, SUMMARY_ROWS)), file=stdout)
    return EXIT_OK


def _scores_to_record(mode: str, scenario: Scenario, scores: int) -> int:
    """Top nodes to record per try: 10 for --json, what --check's expectations need, else --scores."""
    if mode == "json":
        return max(DEFAULT_TOP, scores)
    if mode == "check":
        wanted = scenario.expect.node_scores if scenario.expect is not None else None
        return expected_top(wanted) if wanted else 0
    return scores


def _positive(text: str) -> int:
    """argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree: one `simulate` subcommand."""
    parser = argparse.ArgumentParser(prog="python -m scheduler_core",
                                     description="Offline tools of the schedweb batch scheduler.")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run one scheduling session on a scenario file",
                         description="Run one scheduling session on a scenario file (YAML, or JSON "
                                     "when it ends in .json; '-' reads YAML from stdin).")
    sim.add_argument("file", help="scenario file")
    mode = sim.add_mutually_exclusive_group()
    mode.add_argument("--json", dest="mode", action="store_const", const="json",
                      help="print the session result as JSON")
    mode.add_argument("--check", dest="mode", action="store_const", const="check",
                      help="compare with the file's expect: block; exit 1 on any mismatch")
    sim.add_argument("--forecast", action="store_true",
                     help="also estimate when each waiting job starts (running jobs end as declared)")
    recording = sim.add_mutually_exclusive_group()
    recording.add_argument("--scores", nargs="?", type=_positive, const=DEFAULT_TOP, default=0, metavar="N",
                           help="also print, per task tried, its best N nodes (default 10) with each "
                                "node-order plugin's score (--json always includes node_scores)")
    recording.add_argument("--no-scores", action="store_true",
                           help="record no node scores (bulk what-if runs: --json without node_scores, "
                                "--check without their expectations)")
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Entry point; returns the exit code (argparse errors exit 2 by themselves)."""
    args = build_parser().parse_args(argv)
    return simulate(args.file, args.mode or "summary", stdout or sys.stdout, stderr or sys.stderr,
                    with_forecast=args.forecast, scores=args.scores, no_scores=args.no_scores)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into `head`: stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_MISMATCH)

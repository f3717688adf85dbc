"""The `expect:` block of a scenario: parsed and reference-checked at load, compared by `--check`.

Comparisons (scenario-format.md): `binds`/`pipelined` map each listed task to its node (`null`
= must not be bound/pipelined), `bind_count`/`evict_count` exact, `evictions` the exact set,
`job_phase` exact, queue figures per given dimension within 0.01 (cpu cores and scalars) or
1 KiB (memory), `share` within half a unit of the 3rd decimal, `reasons_contain` substrings of
the reason message (a list = all of them; `null` = no reason), `reason_code` exact (`null` = none).
`forecast` (`{job: {start_in_s: N | null, basis: declared}}`) is compared with the result's
`forecast` key when it has one (`simulate --check` computes it when this block asks for it).
`node_scores` (`{task: {chosen: node | null, top: [node, ...]}}`): the task's recorded choice
and the first nodes of its top list, in order; compared when the result has `node_scores`
(`simulate --check` records them when this block asks for them).
`conditions` (`{job: Unschedulable | Scheduled | null}`): the type of the PodGroup condition the
session set for the job (`null` = none set, e.g. the releasing exception).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler_core.explain.node_scores import check_expected as check_expected_scores
from scheduler_core.explain.node_scores import parse_expected as parse_expected_scores
from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.model import ClusterSnapshot, JobPhase
from scheduler_core.scenario_fields import Ctx, Obj, parse_quantities

# The reason codes of docs/semantics.md section 7, NeverFits first (reasons.ReasonCode).
REASON_CODES = tuple(code.value for code in ReasonCode)
EXPECT_KEYS = ("binds", "bind_count", "evictions", "evict_count", "pipelined", "job_phase", "deserved",
               "real_capability", "allocated", "share", "reasons_contain", "reason_code", "forecast",
               "node_scores", "conditions")
CONDITION_TYPES = ("Unschedulable", "Scheduled")
FIGURE_KEYS = ("deserved", "real_capability", "allocated")
TOLERANCE = {"cpu": 0.01, "memory": 1024.0}
SCALAR_TOLERANCE = 0.01
SHARE_TOLERANCE = 0.0005 + 1e-9


@dataclass
class Expect:
    """Expected outcomes; `None` sections are not checked. `lines[(section, key)]` for messages."""

    binds: dict[str, str | None] | None = None
    bind_count: int | None = None
    evictions: list[str] | None = None
    evict_count: int | None = None
    pipelined: dict[str, str | None] | None = None
    job_phase: dict[str, str] | None = None
    figures: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # section -> queue -> dims
    share: dict[str, float] | None = None
    reasons_contain: dict[str, list[str] | None] | None = None
    reason_code: dict[str, str | None] | None = None
    forecast: dict[str, dict[str, Any]] | None = None  # job -> {start_in_s, basis} (given keys only)
    node_scores: dict[str, dict[str, Any]] | None = None  # task -> {chosen, top} (node_scores.parse_expected)
    conditions: dict[str, str | None] | None = None  # job -> condition type set this session
    lines: dict[tuple[str, str], int | None] = field(default_factory=dict)


def parse_expect(ctx: Ctx, value: Any, path: tuple, snapshot: ClusterSnapshot) -> Expect:
    """Validate the block against the snapshot (known tasks, jobs, queues, nodes, codes)."""
    o = Obj(ctx, value, path, EXPECT_KEYS)
    exp = Expect()
    tasks = {t for j in snapshot.jobs.values() for t in j.tasks}

    def entries(section: str, known: set[str] | dict, what: str) -> list[tuple[str, Any]]:
        raw = o.mapping(section) or {}
        out = []
        for key, v in raw.items():
            exp.lines[(section, str(key))] = ctx.line((*path, section, key))
            if key not in known:
                raise ctx.error((*path, section, key), f"unknown {what} {key!r}")
            out.append((str(key), v))
        return out

    def node_map(section: str) -> dict[str, str | None] | None:
        if not o.has(section):
            return None
        result: dict[str, str | None] = {}
        for key, node in entries(section, tasks, "task"):
            if node is not None and (not isinstance(node, str) or node not in snapshot.nodes):
                raise ctx.error((*path, section, key), f"unknown node {node!r}")
            result[key] = node
        return result

    exp.binds = node_map("binds")
    exp.pipelined = node_map("pipelined")
    for section in ("bind_count", "evict_count"):
        if o.has(section):
            setattr(exp, section, o.integer(section, 0, minimum=0))
            exp.lines[(section, "")] = ctx.line((*path, section))
    if o.has("evictions"):
        exp.lines[("evictions", "")] = ctx.line((*path, "evictions"))
        exp.evictions = []
        for ipath, uid in o.items("evictions"):
            if not isinstance(uid, str) or uid not in tasks:
                raise ctx.error(ipath, f"unknown task {uid!r}")
            exp.evictions.append(uid)
    if o.has("job_phase"):
        exp.job_phase = {}
        for key, phase in entries("job_phase", snapshot.jobs, "job"):
            if not isinstance(phase, str) or phase not in {p.value for p in JobPhase}:
                raise ctx.error((*path, "job_phase", key), f"invalid phase {phase!r} (expected one of: "
                                f"{', '.join(p.value for p in JobPhase)})")
            exp.job_phase[key] = phase
    for section in FIGURE_KEYS:
        if o.has(section):
            exp.figures[section] = {}
            for queue, dims in entries(section, snapshot.queues, "queue"):
                if not isinstance(dims, dict):
                    raise ctx.error((*path, section, queue),
                                    f"expected a mapping of quantities, got {dims!r}")
                exp.figures[section][queue] = parse_quantities(ctx, (*path, section, queue), dims)
    if o.has("share"):
        exp.share = {}
        for queue, v in entries("share", snapshot.queues, "queue"):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ctx.error((*path, "share", queue), f"expected a number, got {v!r}")
            exp.share[queue] = float(v)
    if o.has("reasons_contain"):
        exp.reasons_contain = {}
        for job, v in entries("reasons_contain", snapshot.jobs, "job"):
            texts = [v] if isinstance(v, str) else v
            if texts is not None and not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
                raise ctx.error((*path, "reasons_contain", job), f"expected a string or a list, got {v!r}")
            exp.reasons_contain[job] = texts
    if o.has("reason_code"):
        exp.reason_code = {}
        for job, code in entries("reason_code", snapshot.jobs, "job"):
            if code is not None and code not in REASON_CODES:
                raise ctx.error((*path, "reason_code", job),
                                f"invalid reason code {code!r} (expected one of: {', '.join(REASON_CODES)})")
            exp.reason_code[job] = code
    if o.has("conditions"):
        exp.conditions = {}
        for job, kind in entries("conditions", snapshot.jobs, "job"):
            if kind is not None and kind not in CONDITION_TYPES:
                raise ctx.error((*path, "conditions", job), f"invalid condition type {kind!r} "
                                f"(expected one of: {', '.join(CONDITION_TYPES)})")
            exp.conditions[job] = kind
    if o.has("forecast"):
        exp.forecast = {job: _forecast_entry(ctx, (*path, "forecast", job), v)
                        for job, v in entries("forecast", snapshot.jobs, "job")}
    if o.has("node_scores"):
        exp.node_scores = {task: parse_expected_scores(ctx, (*path, "node_scores", task), v, snapshot.nodes)
                           for task, v in entries("node_scores", tasks, "task")}
    return exp


def _forecast_entry(ctx: Ctx, path: tuple, value: Any) -> dict[str, Any]:
    """One job's expected forecast: `start_in_s` (seconds after now, or null) and/or `basis`."""
    from scheduler_core.forecast.types import Basis

    e = Obj(ctx, value, path, ("start_in_s", "basis"))
    out: dict[str, Any] = {}
    if "start_in_s" in e.data:
        out["start_in_s"] = e.number("start_in_s")
    if e.has("basis"):
        out["basis"] = e.choice("basis", [b.value for b in Basis], None)
    return out


def _fmt(dim: str, value: float) -> str:
    return f"{value:.0f}" if dim == "memory" else f"{value:.6g}"  # bytes: every digit matters


def check_expect(expect: Expect, result: dict[str, Any], filename: str) -> tuple[list[str], int]:
    """Compare a result (SessionResult.to_json() shape) with the expectations.

    Returns (mismatch messages `FILE:LINE: section[key]: ...`, number of comparisons made).
    """
    problems: list[str] = []
    count = 0

    def report(section: str, key: str, message: str) -> None:
        line = expect.lines.get((section, key))
        where = f"{filename}:{line}" if line is not None else filename
        label = f"{section}[{key}]" if key else section
        problems.append(f"{where}: {label}: {message}")

    for section, actual in (("binds", result.get("binds", {})), ("pipelined", result.get("pipelined", {}))):
        wanted = getattr(expect, section)
        for task, node in (wanted or {}).items():
            count += 1
            got = actual.get(task)
            if got != node:
                verb = "bound" if section == "binds" else "pipelined"
                report(section, task, f"expected {node if node is not None else f'not {verb}'}, got "
                       f"{got if got is not None else f'not {verb}'}")
    evictions = list(result.get("evictions", []))
    for section, got_n in (("bind_count", len(result.get("binds", {}))), ("evict_count", len(evictions))):
        wanted_n = getattr(expect, section)
        if wanted_n is not None:
            count += 1
            if got_n != wanted_n:
                report(section, "", f"expected {wanted_n}, got {got_n}")
    if expect.evictions is not None:
        count += 1
        missing = sorted(set(expect.evictions) - set(evictions))
        extra = sorted(set(evictions) - set(expect.evictions))
        if missing or extra:
            report("evictions", "", f"expected {sorted(set(expect.evictions))}, got {sorted(set(evictions))}"
                   f" (missing {missing}, unexpected {extra})")
    phases = result.get("job_phase", {})
    for job, phase in (expect.job_phase or {}).items():
        count += 1
        if phases.get(job) != phase:
            report("job_phase", job, f"expected {phase}, got {phases.get(job, 'no phase reported')}")
    queues = result.get("queues", {})
    for section, per_queue in expect.figures.items():
        for queue, dims in per_queue.items():
            count += 1
            actual = (queues.get(queue) or {}).get(section)
            if actual is None:
                report(section, queue, f"no {section} reported for queue {queue}")
                continue
            for dim, want in dims.items():
                got = float(actual.get(dim, 0.0))
                if abs(got - want) > TOLERANCE.get(dim, SCALAR_TOLERANCE) + 1e-9:  # float noise
                    report(section, queue, f"{dim}: expected {_fmt(dim, want)}, got {_fmt(dim, got)}")
    for queue, want in (expect.share or {}).items():
        count += 1
        got_share = (queues.get(queue) or {}).get("share")
        if got_share is None:
            report("share", queue, f"no share reported for queue {queue}")
        elif abs(float(got_share) - want) > SHARE_TOLERANCE:
            report("share", queue, f"expected {want:.3f}, got {float(got_share):.4f}")
    reasons = result.get("reasons", {})
    for job, texts in (expect.reasons_contain or {}).items():
        count += 1
        reason = reasons.get(job)
        if texts is None:
            if reason is not None:
                report("reasons_contain", job, f"expected no reason, got {reason.get('message')!r}")
        elif reason is None:
            report("reasons_contain", job, f"expected a reason containing {texts}, got none")
        else:
            for text in texts:
                if text not in str(reason.get("message", "")):
                    report("reasons_contain", job, f"{text!r} not in {reason.get('message')!r}")
    for job, code in (expect.reason_code or {}).items():
        count += 1
        got_code = (reasons.get(job) or {}).get("code")
        if got_code != code:
            report("reason_code", job, f"expected {code}, got {got_code}")
    conditions = result.get("conditions", {})
    for job, kind in (expect.conditions or {}).items():
        count += 1
        got_kind = (conditions.get(job) or [{}])[-1].get("type")
        if got_kind != kind:
            report("conditions", job, f"expected {kind or 'no condition'}, got {got_kind or 'no condition'}")
    forecasts = result.get("forecast")
    for job, want_fc in (expect.forecast or {}).items() if forecasts is not None else ():
        count += 1
        got_fc = forecasts.get(job)
        if got_fc is None:
            report("forecast", job, "no forecast (the job was not waiting)")
            continue
        start = got_fc.get("start_in_s")
        want_start = want_fc.get("start_in_s", start)
        if (start is None) != (want_start is None) or (start is not None and abs(start - want_start) > 1e-6):
            report("forecast", job, f"start_in_s: expected {want_start}, got {start}")
        if want_fc.get("basis", got_fc.get("estimate_basis")) != got_fc.get("estimate_basis"):
            report("forecast", job, f"basis: expected {want_fc['basis']}, got {got_fc.get('estimate_basis')}")
    if expect.node_scores is not None:
        count += check_expected_scores(expect.node_scores, result.get("node_scores"),
                                       lambda task, message: report("node_scores", task, message))
    return problems, count


__all__ = ["REASON_CODES", "Expect", "check_expect", "parse_expect"]

"""Property (issue 16, Deliver 1): every figure a reason quotes is the committed end-of-session
state of its session, the same numbers as `result.queues` (QueueFigures).

Checked for every reason of every session on the benchmark clusters (sizes S and M, every
scenario; S also under flat and hierarchical capacity) and on the demo cluster (proportion,
capacity, capacity with hierarchy):
- quota reasons: each `insufficient[dim].left` and each "(need X, Y left)" of the message is
  `max(<limit_figure> - allocated, 0)` (enqueue: `- (allocated + inqueue - elastic)`) of the named
  queue's figures; an "overused" message quotes that queue's allocated and deserved;
- every `queue_chain` entry: `allocated` is the queue's figure and `headroom` is
  `max(<headroom_of> - allocated, 0)`, per dimension;
- NeverFits naming a queue: `limit` is that queue's capability, guarantee or real capability;
- amounts are rounded for people: no message number with 4+ decimals, details in output units
  rounded to the thousandth (cores, scalars) or the byte (memory).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from scheduler_core.bench.generator import SCENARIOS, build_world
from scheduler_core.bench.snapshot import Churn, conf_of, to_snapshot
from scheduler_core.explain.reason_figures import output_amount, output_quantities
from scheduler_core.framework.conf import parse_conf
from scheduler_core.plugins.util.queue_attr import format_dim
from scheduler_core.resources import Resource
from scheduler_core.result import SessionResult
from scheduler_core.scheduler import run_session
from tests.scheduler_core.explain.test_reasons_demo import CONFS as DEMO_CONFS
from tests.scheduler_core.explain.test_reasons_demo import demo_snapshot

CLAUSE = re.compile(r"insufficient (\S+) \(need ([^,]+), ([^ ]+) left\)")
OVERUSED = re.compile(r"allocated (.+?) (?:reached its|of) deserved (.+?)\)?$")
NOISE = re.compile(r"\d\.\d{4,}")


def capacity_conf(spec: dict[str, Any], hierarchy: bool) -> Any:
    """The bench case's configuration with capacity in place of proportion."""
    raw = conf_of(spec)
    tiers = []
    for tier in raw.tiers:
        plugins = []
        for p in tier.plugins:
            if p.name == "proportion":
                plugins.append({"name": "capacity", "enableHierarchy": hierarchy})
            else:
                plugins.append({"name": p.name, "arguments": dict(p.arguments)})
        tiers.append({"plugins": plugins})
    return parse_conf({"actions": ", ".join(raw.actions), "tiers": tiers})


def bench_sessions(size: str, scenario: str, variant: str, cycles: int) -> list[SessionResult]:
    """Results of `cycles` sessions of a bench case (churn between them, as the decisions digest)."""
    world = build_world(size, scenario, 1)
    cfg = (
        conf_of(world.spec) if variant == "proportion" else capacity_conf(world.spec, variant == "hierarchy")
    )
    churn = Churn(world) if scenario in ("steady", "backlog") else None
    out = []
    for cycle in range(cycles):
        if churn is not None and scenario == "steady" and cycle > 0:
            churn.step()
        result = run_session(to_snapshot(world.spec), cfg)
        out.append(result)
        if churn is not None:
            churn.apply(result)
    return out


def _used(fig: Any, check: str) -> Resource:
    used = fig.allocated.clone()
    if check == "enqueue":
        used.add(fig.inqueue).sub_without_assert(fig.elastic)
    return used


def _left(limit: Resource, used: Resource, dim: str) -> float:
    return max(limit.get(dim) - used.get(dim), 0.0)


def _rounded(value: Any, dim: str | None = None) -> list[str]:
    """Paths of details amounts that are not rounded output units."""
    bad: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            bad += [f"{k}.{p}" for p in _rounded(v, k if k in ("cpu", "memory") or "/" in k else dim)]
    elif isinstance(value, list):
        for v in value:
            bad += _rounded(v, dim)
    elif isinstance(value, float) and math.isfinite(value):
        ok = value == round(value) if dim == "memory" else value == round(value, 3)
        if not ok:
            bad.append(repr(value))
    return bad


def check_result(result: SessionResult) -> int:
    """Assert the property for every reason of one session; return the number of figures checked."""
    figs, checked = result.queues, 0
    for uid, reason in result.reasons.items():
        code, message, details = str(reason.code), reason.message, reason.details
        where = f"{uid} [{code}] {message}"
        assert not NOISE.search(message), where
        if code in ("QueueOverDeserved", "QueueOverCapability", "NeverFits"):
            assert not _rounded(
                {
                    k: v
                    for k, v in details.items()
                    if k not in ("tasks", "nodes", "matching_nodes", "max_tasks")
                },
                details.get("dimension"),
            ), where
        if "insufficient" in details:
            fig = figs[details["queue"]]
            limit, used = getattr(fig, details["limit_figure"]), _used(fig, details["check"])
            clauses = {m.group(1): (m.group(2), m.group(3)) for m in CLAUSE.finditer(message)}
            assert list(clauses) == list(details["insufficient"]), where
            for dim, quoted in details["insufficient"].items():
                left = _left(limit, used, dim)
                assert quoted["left"] == output_amount(dim, left), where
                assert clauses[dim][1] == format_dim(dim, left), where
                checked += 1
        if details.get("check") == "overused":
            fig = figs[details["queue"]]
            names = fig.deserved.resource_names()
            listed = OVERUSED.search(message)
            assert listed is not None, where
            assert listed.group(1) == ", ".join(
                f"{n} {format_dim(n, fig.allocated.get(n))}" for n in names
            ), where
            assert listed.group(2) == ", ".join(f"{n} {format_dim(n, fig.deserved.get(n))}" for n in names), (
                where
            )
            checked += 1
        for entry in details.get("queue_chain") or ():
            fig = figs[entry["queue"]]
            assert entry["allocated"] == output_quantities(fig.allocated), where
            limit = getattr(fig, entry["headroom_of"])
            for dim, room in (entry["headroom"] or {}).items():
                assert room == output_amount(dim, _left(limit, fig.allocated, dim)), (
                    where,
                    entry["queue"],
                    dim,
                )
                checked += 1
        if code == "NeverFits" and details.get("kind") == "GangExceedsQueueLimit":
            fig, dim = figs[details["queue"]], details["dimension"]
            source = getattr(fig, details["limit_figure"])
            assert details["limit"] == output_amount(dim, source.get(dim)), where
            assert message.endswith(f"can never have more than {format_dim(dim, source.get(dim))}"), where
            checked += 1
    return checked


# (size, scenario, cycles, variant): every S and M scenario; S under capacity too.
BENCH = [(size, scenario, 2 if scenario in ("steady", "backlog") and size == "S" else 1, "proportion")
         for size in ("S", "M") for scenario in SCENARIOS]
BENCH += [("S", scenario, 1, variant) for scenario in SCENARIOS for variant in ("capacity", "hierarchy")]
CASES = [pytest.param(*case, id="-".join(map(str, case)), marks=[pytest.mark.slow] if case[0] == "M" else [])
         for case in BENCH]


@pytest.mark.parametrize(("size", "scenario", "cycles", "variant"), CASES)
def test_bench_reasons_quote_the_committed_figures(size, scenario, cycles, variant):
    for result in bench_sessions(size, scenario, variant, cycles):
        check_result(result)


@pytest.mark.parametrize("name", sorted(DEMO_CONFS))
def test_demo_reasons_quote_the_committed_figures(name):
    result = run_session(demo_snapshot(), DEMO_CONFS[name])
    assert check_result(result) > 0


def test_a_gang_never_quotes_its_own_discarded_placements():
    # Found item 1, as on the demo: the sandbox gang's tentative placements used to leave "0 left".
    result = run_session(demo_snapshot(), DEMO_CONFS["proportion"])
    fig = result.queues["nlp-eval"]
    reason = result.reasons["nlp/elastic-hpo"]
    assert reason.details["insufficient"]["cpu"]["left"] == output_amount(
        "cpu", max(fig.deserved.milli_cpu - fig.allocated.milli_cpu, 0)
    )

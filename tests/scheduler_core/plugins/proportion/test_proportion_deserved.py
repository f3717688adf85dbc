"""The iterative weighted deserved algorithm: seed examples exactly, explanations, properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.plugins.proportion.deserved import compute_deserved
from scheduler_core.plugins.util.queue_attr import QueueAttr, over_dimensions
from scheduler_core.resources import Resource


def cpu(cores: float) -> Resource:
    """A cpu-only resource."""
    return Resource(milli_cpu=cores * 1000)


def attr(name: str, weight: int, request: float, cap: float | None = None,
         guarantee: float = 0.0) -> QueueAttr:
    """A queue attr with cpu-only figures (cores)."""
    return QueueAttr(name=name, weight=weight, request=cpu(request),
                     real_capability=cpu(cap) if cap is not None else None, guarantee=cpu(guarantee))


def cores(a: QueueAttr) -> float:
    """Deserved cpu in cores, rounded to 2 decimals like the seeds."""
    return round(a.deserved.milli_cpu / 1000, 2)


def test_seed_000_iterative_example() -> None:
    # 100 CPU, weights 2/3/5, requests 80/15/200: round 1 A=20 B=15 (met) C=50; round 2 shares 15.
    qs = [attr("a", 2, 80), attr("b", 3, 15), attr("c", 5, 200)]
    run = compute_deserved(qs, cpu(100))
    assert [cores(a) for a in qs] == [24.29, 15.0, 60.71]
    assert run.rounds == 2
    assert run.explanations["b"][0] == {
        "round": 1, "remaining": {"cpu": 100.0, "memory": 0.0}, "total_weight": 10.0, "weight": 3,
        "deserved": {"cpu": 15.0, "memory": 0.0}, "clamp": "request", "clamps": {"cpu": "request"},
        "met": True, "scaled_down": False}
    second = run.explanations["a"][1]
    assert (second["round"], second["remaining"]["cpu"], second["total_weight"]) == (2, 15.0, 7.0)
    assert (round(second["deserved"]["cpu"], 4), second["clamp"], second["met"]) == (24.2857, "none", False)
    assert len(run.explanations["b"]) == 1  # b took part in round 1 only


def test_seed_001_guarantee_and_capability_example() -> None:
    # A cap 50 guar 10 req 80, B req 60, C guar 20 req 30; real capability A 50, B 70, C 90.
    qs = [attr("a", 2, 80, cap=50, guarantee=10), attr("b", 3, 60, cap=70),
          attr("c", 5, 30, cap=90, guarantee=20)]
    run = compute_deserved(qs, cpu(100))
    assert [cores(a) for a in qs] == [28.0, 42.0, 30.0]
    assert [r["deserved"]["cpu"] for r in run.explanations["c"]] == [30.0]
    assert run.explanations["c"][0]["clamp"] == "request"
    assert [round(r["deserved"]["cpu"], 6) for r in run.explanations["a"]] == [20.0, 28.0]


@pytest.mark.parametrize(("queues", "total", "expected", "clamp"), [
    # capability clamps, the rest flows to the other queue
    ([attr("a", 1, 100, cap=10), attr("b", 1, 100)], 100, [10.0, 90.0], "real capability"),
    # guarantee is a floor even above the weighted share and the request
    ([attr("a", 1, 1, guarantee=30), attr("b", 1, 100)], 100, [30.0, 70.0], "guarantee"),
    # no request at all: deserved 0
    ([attr("a", 1, 0), attr("b", 1, 100)], 100, [0.0, 100.0], "request"),
    # weight 0: no share, but the guarantee floor still applies
    ([attr("a", 0, 50, guarantee=5), attr("b", 1, 100)], 100, [5.0, 95.0], "guarantee"),
    # everybody satisfied: leftovers stay unassigned
    ([attr("a", 1, 10), attr("b", 3, 20)], 100, [10.0, 20.0], "request"),
])
def test_clamps_table(queues: list[QueueAttr], total: float, expected: list[float], clamp: str) -> None:
    run = compute_deserved(queues, cpu(total))
    assert [cores(a) for a in queues] == expected
    assert run.explanations["a"][0]["clamp"] == clamp


def test_per_dimension_independence_and_json() -> None:
    # a asks for GPUs, b for cpu only: each dimension is shared on its own.
    gpu = "nvidia.com/gpu"
    a = QueueAttr(name="a", weight=1, request=Resource(4000, 0, {gpu: 4000}))
    b = QueueAttr(name="b", weight=1, request=Resource(50000, 0))
    run = compute_deserved([a, b], Resource(40000, 0, {gpu: 8000}))
    assert (a.deserved.milli_cpu, a.deserved.scalars[gpu]) == (4000.0, 4000.0)
    assert (b.deserved.milli_cpu, b.deserved.scalars[gpu]) == (36000.0, 0.0)
    json.dumps(run.explanations)  # serialisable as is


def test_guarantee_floor_never_over_commits() -> None:
    # a's guarantee 60 lifts it above its weighted third; b and c (real capability 40 each)
    # share what is left instead of keeping 33.3 each (Volcano would hand out 126.7 of 100).
    qs = [attr("a", 1, 100, cap=100, guarantee=60), attr("b", 1, 100, cap=40), attr("c", 1, 100, cap=40)]
    run = compute_deserved(qs, cpu(100))
    assert [cores(a) for a in qs] == [60.0, 20.0, 20.0]
    assert run.explanations["b"][0]["scaled_down"] is True
    exact = [attr("a", 1, 100, cap=100, guarantee=60), attr("b", 1, 100, cap=40), attr("c", 1, 100, cap=40)]
    compute_deserved(exact, cpu(100), guard_overshoot=False)
    assert [cores(a) for a in exact] == [60.0, 33.33, 33.33]


def test_empty_input() -> None:
    assert compute_deserved([], cpu(10)).rounds == 0


# -- properties ---------------------------------------------------------------------------------

queue_st = st.tuples(
    st.integers(min_value=1, max_value=20),                       # weight
    st.integers(min_value=0, max_value=400),                      # request (cores)
    st.one_of(st.none(), st.integers(min_value=0, max_value=300)),  # capability
    st.integers(min_value=0, max_value=60),                       # guarantee
)


def _build(spec: list[tuple[int, int, int | None, int]], total: int, scale: int = 1) -> list[QueueAttr]:
    # real capability exactly as the plugin computes it
    total_guarantee = sum(g for _, _, _, g in spec)
    out = []
    for i, (w, req, cap, g) in enumerate(spec):
        real = max(total - total_guarantee, 0) + g
        if cap is not None:
            real = min(real, cap)
        out.append(attr(f"q{i:03d}", w * scale, req, cap=real, guarantee=g))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(queue_st, min_size=1, max_size=12), st.integers(min_value=1, max_value=500))
def test_deserved_properties(spec: list[tuple[int, int, int | None, int]], total: int) -> None:
    qs = _build(spec, total)
    run = compute_deserved(qs, cpu(total))
    eps = 0.2  # milli-cpu: the comparison tolerance plus float noise
    for a in qs:
        d, r, g = a.deserved.milli_cpu, a.request.milli_cpu, a.guarantee.milli_cpu
        assert d <= max(r, g) + eps
        assert d <= max(a.real_capability.milli_cpu, g) + eps
        assert d >= g - eps
    if sum(g for *_, g in spec) <= total:
        assert sum(a.deserved.milli_cpu for a in qs) <= total * 1000 + eps * len(qs)
    # each round meets a queue or drains a dimension; float tails end at the tolerance
    assert run.rounds <= len(qs) + 3


@settings(max_examples=80, deadline=None)
@given(st.lists(queue_st, min_size=1, max_size=10), st.integers(min_value=1, max_value=500))
def test_doubling_weights_changes_nothing(spec: list[tuple[int, int, int | None, int]], total: int) -> None:
    once, twice = _build(spec, total), _build(spec, total, scale=2)
    compute_deserved(once, cpu(total))
    compute_deserved(twice, cpu(total))
    for a, b in zip(once, twice, strict=True):
        assert a.deserved.milli_cpu == pytest.approx(b.deserved.milli_cpu, abs=1e-6)


dims_st = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(0, 4000), "memory": st.integers(0, 4000), "a": st.integers(0, 4000),
    "b": st.integers(0, 4000)})


def _res(d: dict[str, int]) -> Resource:
    return Resource(d.get("cpu", 0), d.get("memory", 0), {k: v for k, v in d.items() if k in ("a", "b")})


@settings(max_examples=200, deadline=None)
@given(dims_st, dims_st, dims_st)
def test_over_dimensions_matches_resource_comparison(used: dict, req: dict, limit: dict) -> None:
    u, r, lim = _res(used), _res(req), _res(limit)
    expected = u.clone().add(r).less_equal_with_dimension_and_resources_name(lim, r)[1]
    assert over_dimensions(u, r, lim) == expected

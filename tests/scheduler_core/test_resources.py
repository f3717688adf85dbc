"""Resource vector and quantity parser: Kubernetes grammar, Volcano's operations (docs/semantics.md
section 1)."""

from __future__ import annotations

import math

import pytest

from scheduler_core.resources import (
    MIN_RESOURCE,
    Infinity,
    QuantityError,
    Resource,
    ResourceError,
    Zero,
    exceeded_part,
    max_resource,
    min_resource,
    parse_quantity,
    share,
)

GI = 2**30
GPU = "nvidia.com/gpu"


def R(cpu: float = 0, mem: float = 0, **scalars: float) -> Resource:
    """Resource in stored units; scalar names use '_' for '/' (gpu -> nvidia.com/gpu)."""
    names = {"gpu": GPU}
    return Resource(cpu, mem, {names.get(k, k): v for k, v in scalars.items()})


# -- parser -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("1", 1.0), ("0", 0.0), ("1.5", 1.5), ("1.", 1.0), (".5", 0.5), ("+2", 2.0),
    ("500m", 0.5), ("1k", 1e3), ("1M", 1e6), ("1G", 1e9), ("2T", 2e12), ("1P", 1e15), ("1E", 1e18),
    ("1Ki", 1024.0), ("1Mi", 2.0**20), ("1Gi", 2.0**30), ("1Ti", 2.0**40), ("1Pi", 2.0**50),
    ("1Ei", 2.0**60), ("1.5Gi", 1.5 * 2**30), ("1e3", 1e3), ("1E3", 1e3), ("1e+20", 1e20),
    ("25e-1", 2.5), ("0.1", 0.1),
    (3, 3.0), (1.5, 1.5), (0, 0.0),
])
def test_parse_quantity_accepts_kubernetes_grammar(text, value):
    assert parse_quantity(text) == value


def test_decimal_and_binary_suffixes_stay_distinct():
    assert (parse_quantity("1G"), parse_quantity("1Gi")) == (1_000_000_000, 1_073_741_824)


@pytest.mark.parametrize("text", [
    "12x", "", "Infinity", "inf", "1_000", "nan", "NaN", "1e", "e3", "1Ki5", " 1", "1 ", "1 Gi",
    "1gi", "1K", "1.2.3", "--1", "0x10", "1e3Gi", "٣", "m", "1mm", "1e999",
])
def test_parse_quantity_rejects_and_names_the_text(text):
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert repr(text) in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("value", [True, False, None, [1], float("nan"), float("inf")])
def test_parse_quantity_rejects_non_numbers(value):
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["-1", "-500m", -2, -0.5])
def test_negative_quantities_refused_unless_allowed(value):
    with pytest.raises(QuantityError, match=r"^negative quantity"):
        parse_quantity(value)
    assert parse_quantity(value, allow_negative=True) < 0


def test_from_quantities_converts_to_stored_units():
    r = Resource.from_quantities({"cpu": "500m", "memory": "1Gi", GPU: 1, "pods": 110,
                                  "example.com/fpga": "2"})
    assert (r.milli_cpu, r.memory, r.scalars, r.max_task_num) == (
        500.0, float(GI), {GPU: 1000.0, "example.com/fpga": 2000.0}, 110)


@pytest.mark.parametrize("mapping,fragment", [
    ({"cpu": "12x"}, "cpu: invalid quantity '12x'"),
    ({"memory": "-1Gi"}, "memory: negative quantity '-1Gi'"),
    ({GPU: True}, "nvidia.com/gpu: invalid quantity True"),
])
def test_from_quantities_errors_name_key_and_text(mapping, fragment):
    with pytest.raises(QuantityError) as err:
        Resource.from_quantities(mapping)
    assert fragment in str(err.value)


def test_canonical_and_quantities_round_trip():
    r = Resource.from_quantities({"cpu": "1.5", "memory": "2G", GPU: 2, "pods": 8})
    assert r.to_canonical() == {"cpu": 1500.0, "memory": 2e9, GPU: 2000.0}
    assert r.to_quantities() == {"cpu": 1.5, "memory": 2e9, GPU: 2.0}
    back = Resource.from_canonical({**r.to_canonical(), "pods": 8})
    assert back == r and back.max_task_num == 8
    with pytest.raises(QuantityError, match="cpu"):
        Resource.from_canonical({"cpu": "1"})


def test_clone_is_deep_and_empty_is_zero():
    r = R(1000, 5, gpu=1000)
    c = r.clone()
    c.scalars[GPU] = 0
    c.milli_cpu = 0
    assert r == R(1000, 5, gpu=1000)
    assert Resource.empty().is_empty() and Resource.empty() == R()


# -- arithmetic ---------------------------------------------------------------------------------

def test_add_seed_example_in_place():
    r = R(2000, 4 * GI, gpu=1)
    out = r.add(R(1000, 2 * GI, gpu=1))
    assert out is r and r == R(3000, 6 * GI, gpu=2)


def test_add_ignores_max_task_num():
    r = Resource(1, 1, max_task_num=3)
    r.add(Resource(1, 1, max_task_num=5))
    assert r.max_task_num == 3


def test_sub_asserts_and_sub_without_assert_goes_negative():
    assert R(3000, 10).sub(R(1000, 10)) == R(2000, 0)
    assert R(1000).sub(R(1000.05)).milli_cpu == pytest.approx(-0.05)  # within tolerance: allowed
    with pytest.raises(ResourceError, match="not sufficient"):
        R(1000).sub(R(2000))
    with pytest.raises(ResourceError):
        R(1000).sub(R(0, 0, gpu=1000))  # a missing scalar is 0 (Zero)
    assert R(1000).sub_without_assert(R(2000, 0, gpu=1000)) == R(-1000, 0, gpu=-1000)


def test_multi_and_set_max_resource():
    assert R(1000, 10, gpu=2000).multi(0.5) == R(500, 5, gpu=1000)
    # Pod request rule: max(sum(containers), max(init containers)), a worked example.
    r = R(800, 1.5 * GI)
    r.set_max_resource(R(1000, 512 * 2**20, x=5))
    assert r == R(1000, 1.5 * GI, x=5)


def test_fit_delta_only_requested_dimensions_with_tolerance():
    r = R(1000, 100, gpu=2000).fit_delta(R(400, 0, gpu=1000, fpga=1000))
    assert r.milli_cpu == pytest.approx(599.9) and r.memory == 100
    assert r.scalars == {GPU: pytest.approx(999.9), "fpga": pytest.approx(-1000.1)}


def test_min_dimension_resource_defaults():
    base, other = R(2000, 4 * GI, hp=7, gpu=3000), R(3000, 1000, gpu=1000)
    assert base.clone().min_dimension_resource(other, Infinity) == R(2000, 1000, hp=7, gpu=1000)
    assert base.clone().min_dimension_resource(other, Zero) == R(2000, 1000, hp=0, gpu=1000)


def test_diff_seed_example_and_infinity_marks():
    inc, dec = R(3000, 2 * GI).diff(R(2000, 4 * GI), Zero)
    assert (inc, dec) == (R(1000, 0), R(0, 2 * GI))
    inc, dec = R(1, 1, gpu=5).diff(R(1, 1, fpga=5), Infinity)
    # A dimension missing on the left is unlimited there: increased by inf; missing right: decreased.
    assert (inc.scalars, dec.scalars) == ({"fpga": math.inf}, {GPU: math.inf})


def test_add_scalar_set_scalar_get_and_names():
    r = R(1000, 0.05).add_scalar(GPU, 500).add_scalar(GPU, 500).set_scalar("x", 0.01)
    assert (r.get("cpu"), r.get("memory"), r.get(GPU), r.get("absent")) == (1000, 0.05, 1000, 0)
    assert r.resource_names() == ["cpu", GPU]
    assert [r.is_zero(n) for n in ("cpu", "memory", GPU, "x", "absent")] == [False, True, False, True, True]


@pytest.mark.parametrize("r,empty", [
    (R(), True), (R(0.09, 0.09, gpu=0.09), True), (R(0.1), False), (R(0, 0, gpu=1), False),
    (Resource(max_task_num=5), True),
])
def test_is_empty(r, empty):
    assert r.is_empty() is empty


# -- comparisons --------------------------------------------------------------------------------

# (method, left, right, default, expected)
COMPARISONS = [
    ("less", R(1000, 2 * GI, gpu=1), R(2000, 4 * GI, gpu=2), Zero, True),  # a worked example
    ("less", R(1000, 2), R(1000, 3), Zero, False),
    ("less", R(1, 1, gpu=1), R(2, 2), Zero, False),  # gpu 1 < 0 fails
    ("less", R(1, 1, gpu=1), R(2, 2), Infinity, True),  # missing right = unlimited
    ("less", R(1, 1), R(2, 2, gpu=1), Infinity, False),  # missing left = unlimited
    ("less_equal", R(1000.05, 5), R(1000, 5), Zero, True),  # tolerance 0.1
    ("less_equal", R(1000.1, 5), R(1000, 5), Zero, False),
    ("less_equal", R(1, 1, gpu=1000), R(2, 2), Zero, False),
    ("less_equal", R(1, 1, gpu=1000), R(2, 2), Infinity, True),
    ("less_equal", R(1, 1), R(2, 2, gpu=1000), Infinity, False),
    ("less_equal", R(1, 1), R(2, 2, gpu=1000), Zero, True),
    ("less_partly", R(5, 1), R(1, 2), Zero, True),
    ("less_partly", R(5, 5, gpu=1), R(1, 1, gpu=2), Zero, True),
    ("less_partly", R(5, 5, gpu=1), R(1, 1), Zero, False),
    ("less_partly", R(5, 5), R(1, 1, gpu=1), Infinity, False),  # left unlimited: never less
    ("less_partly", R(5, 5, gpu=1), R(1, 1), Infinity, True),
    ("less_equal_partly", R(5, 1), R(1, 1), Zero, True),
    ("less_equal_partly", R(5, 5, gpu=1), R(1, 1, gpu=1), Zero, True),
    ("less_equal_partly", R(5, 5, gpu=1), R(1, 1), Zero, False),
    ("less_equal_partly", R(5, 5, gpu=1), R(1, 1), Infinity, True),
    ("greater_partly", R(5, 1), R(1, 1), Zero, True),
    ("greater_partly", R(1.05, 1), R(1, 1), Zero, False),
    ("greater_partly", R(1, 1, gpu=1), R(1, 1), Infinity, False),
    ("equal", R(1000, 5), R(1000.05, 5), Zero, True),
    ("equal", R(1000, 5, gpu=0), R(1000, 5), Zero, True),
    ("equal", R(1000, 5, gpu=0), R(1000, 5), Infinity, False),
    ("equal", R(1000, 5), R(1000, 5.2), Zero, False),
]


@pytest.mark.parametrize("method,left,right,default,expected", COMPARISONS)
def test_comparisons(method, left, right, default, expected):
    before = (left.clone(), right.clone())
    assert getattr(left, method)(right, default) is expected
    assert (left, right) == before  # comparisons never modify


# Volcano's edges (docs/semantics.md section 1): (method, left, right, arg, expected)
EDGES = [
    # Infinity: a scalar only on the right-hand side is ignored (Volcano walks the left's scalars).
    ("less_equal_with_resources_name", R(1, 1), R(2, 2, gpu=1000), Infinity, (True, [])),
    ("less_equal_with_resources_name", R(1, 1, gpu=5), R(2, 2, gpu=1000), Infinity, (True, [])),
    ("less_equal_with_resources_name", R(1, 1, gpu=2000), R(2, 2, gpu=1000), Infinity, (False, [GPU])),
    ("less_equal_with_resources_name", R(1, 1, gpu=2000), R(2, 2), Infinity, (True, [])),
    ("less_equal_with_resources_name", R(1, 1, gpu=2000), R(2, 2), Zero, (False, [GPU])),
    ("less_equal_with_resources_name", R(1, 1), R(2, 2, gpu=1000), Zero, (True, [])),
    ("greater_partly", R(1, 1), R(2, 2, gpu=1000), Infinity, False),
    ("greater_partly", R(1, 1, gpu=2000), R(2, 2, gpu=1000), Infinity, True),
    ("greater_partly", R(3, 1), R(2, 2, gpu=1000), Infinity, True),
    ("greater_partly", R(1, 1), R(2, 2, gpu=1000), Zero, False),
    ("greater_partly", R(1, 1, gpu=1), R(2, 2), Zero, True),
    # None: every dimension with the Zero default.
    ("less_equal_with_dimension_and_resources_name", R(3, 1), R(2, 2), None, (False, ["cpu"])),
    ("less_equal_with_dimension_and_resources_name", R(1, 1, a=1, b=1), R(2, 2, a=1), None, (False, ["b"])),
    ("less_equal_with_dimension", R(3, 1), R(2, 2), None, False),
    # A missing or empty request: False (no requested dimension is within).
    ("less_equal_partly_with_dimension", R(1, 1), R(2, 2), None, False),
    ("less_equal_partly_with_dimension", R(1, 1), R(2, 2), R(), False),
    ("less_equal_partly_with_dimension", R(3, 1), R(2, 2), R(1, 0), False),
    ("less_equal_partly_with_dimension", R(3, 1), R(2, 2), R(1, 1), True),
]


@pytest.mark.parametrize("method,left,right,arg,expected", EDGES)
def test_volcano_edges(method, left, right, arg, expected):
    before = (left.clone(), right.clone())
    assert getattr(left, method)(right, arg) == expected
    assert (left, right) == before


def test_less_equal_with_resources_name_seed_example():
    r, rr = R(3000, 8 * GI, gpu=2000), R(2000, 4 * GI, gpu=4000)
    assert r.less_equal_with_resources_name(rr, Zero) == (False, ["cpu", "memory"])
    assert R(1, 1, b=9, a=9).less_equal_with_resources_name(R(0, 1), Zero) == (False, ["cpu", "a", "b"])
    assert R(1, 1, a=9).less_equal_with_resources_name(R(1, 1), Infinity) == (True, [])


@pytest.mark.parametrize("r,rr,req,expected", [
    (R(3000, 8 * GI), R(2000, 4 * GI), R(0, 0, gpu=1000), (True, [])),  # a worked example
    (R(3000, 8 * GI), R(2000, 4 * GI), R(1, 0), (False, ["cpu"])),
    (R(3000, 8 * GI, gpu=2000), R(2000, 4 * GI), R(1, 1, gpu=1), (False, ["cpu", "memory", GPU])),
    (R(1000, 5), R(1000.05, 5), R(1, 1), (True, [])),
    (R(1000, 5), R(0, 0), None, (False, ["cpu", "memory"])),  # None: every dimension, Zero default
    (R(1000, 5), R(1000, 5), None, (True, [])),
    (R(1, 1, gpu=1000), R(1, 1), None, (False, [GPU])),  # missing on rr = 0
    (R(1, 1), R(1, 1, gpu=1000), None, (True, [])),
])
def test_less_equal_with_dimension(r, rr, req, expected):
    assert r.less_equal_with_dimension_and_resources_name(rr, req) == expected
    assert r.less_equal_with_dimension(rr, req) is expected[0]


@pytest.mark.parametrize("r,rr,req,expected", [
    (R(3000, 1), R(2000, 4), R(1, 1), True),  # memory fits
    (R(3000, 5), R(2000, 4), R(1, 1), False),
    (R(3000, 5), R(2000, 4), R(1, 0), False),
    (R(3000, 5, gpu=1000), R(2000, 4, gpu=1000), R(1, 1, gpu=1), True),
    (R(3000, 5), R(2000, 4), R(), False),  # nothing requested: no dimension to be within
    (R(3000, 5), R(2000, 4), None, False),
    (R(1, 1), R(2000, 4), None, False),  # even when everything would fit
    (R(1, 1), R(2000, 4), R(), False),
])
def test_less_equal_partly_with_dimension(r, rr, req, expected):
    assert r.less_equal_partly_with_dimension(rr, req) is expected


# -- module helpers -----------------------------------------------------------------------------

def test_exceeded_part():
    assert exceeded_part(R(100, 5, gpu=3), R(85, 7, gpu=1, x=4)) == R(15, 0, gpu=2)
    assert exceeded_part(R(1), R(2)) == R()


@pytest.mark.parametrize("l,r,expected", [(0, 0, 0.0), (3, 0, 1.0), (1, 4, 0.25), (8, 4, 2.0)])
def test_share(l, r, expected):  # noqa: E741
    assert share(l, r) == expected


def test_max_and_min_resource_return_new_values():
    a, b = R(1, 9, gpu=3, x=1), R(5, 2, gpu=1, y=7)
    assert max_resource(a, b) == R(5, 9, gpu=3, x=1, y=7)
    assert min_resource(a, b) == R(1, 2, gpu=1, x=0)
    assert a == R(1, 9, gpu=3, x=1) and b == R(5, 2, gpu=1, y=7)


def test_min_resource_constant():
    assert MIN_RESOURCE == 0.1

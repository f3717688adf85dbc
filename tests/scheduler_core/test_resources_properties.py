"""Algebraic properties of Resource operations (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.resources import (
    Infinity,
    Resource,
    Zero,
    exceeded_part,
    max_resource,
    min_resource,
    parse_quantity,
)

# Integral stored values keep float arithmetic exact, so properties can assert equality.
values = st.integers(min_value=0, max_value=10**12).map(float)
names = st.sampled_from(["nvidia.com/gpu", "example.com/fpga", "x"])
scalar_maps = st.dictionaries(names, values, max_size=3)
resources = st.builds(Resource, values, values, scalar_maps)
defaults = st.sampled_from([Zero, Infinity])


@given(resources, resources)
def test_add_then_sub_is_identity(a, b):
    assert a.clone().add(b).sub(b).equal(a, Zero)


@given(resources, resources)
def test_add_is_commutative(a, b):
    assert a.clone().add(b) == b.clone().add(a)


@given(resources, resources)
def test_diff_reconstructs_under_zero(r, rr):
    inc, dec = r.diff(rr, Zero)
    assert rr.clone().add(inc).sub_without_assert(dec) == r
    for part in (inc, dec):
        assert part.milli_cpu >= 0 and part.memory >= 0 and all(v >= 0 for v in part.scalars.values())


@given(resources, resources, defaults)
def test_less_implies_less_equal(a, b, default):
    if a.less(b, default):
        assert a.less_equal(b, default)


@given(resources, defaults)
def test_less_equal_and_equal_are_reflexive(a, default):
    assert a.less_equal(a, default) and a.equal(a, default)
    assert not a.less(a, default) and not a.greater_partly(a, default)


@given(resources, resources)
def test_exceeded_part_is_non_negative_and_bounded(a, b):
    part = exceeded_part(a, b)
    assert part.less_equal(a, Zero)
    assert part.milli_cpu >= 0 and part.memory >= 0 and all(v >= 0 for v in part.scalars.values())
    # What exceeds b, added to min(a, b), gives back a.
    assert min_resource(a, b).add(part) == a


@given(resources, resources)
def test_min_max_bound_both(a, b):
    lo, hi = min_resource(a, b), max_resource(a, b)
    assert lo.less_equal(a, Zero) and lo.less_equal(b, Zero)
    assert a.less_equal(hi, Zero) and b.less_equal(hi, Zero)


@given(resources, resources)
def test_less_equal_with_resources_name_agrees_with_less_equal(a, b):
    ok, names = a.less_equal_with_resources_name(b, Zero)
    assert ok is a.less_equal(b, Zero) and ok is (names == [])


@given(resources, resources, resources)
def test_full_less_equal_implies_less_equal_with_any_dimensions(a, b, req):
    if a.less_equal(b, Zero):
        assert a.less_equal_with_dimension(b, req)
        # Partly needs some requested dimension (an empty request is never "within").
        asks = req.milli_cpu > 0 or req.memory > 0 or any(v > 0 for v in req.scalars.values())
        assert a.less_equal_partly_with_dimension(b, req) is asks
    ok, names = a.less_equal_with_dimension_and_resources_name(b, req)
    assert ok is (names == []) and set(names) <= set(req.resource_names())


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi"]))
def test_parse_quantity_integers_with_suffix(n, suffix):
    factor = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[suffix]
    assert parse_quantity(f"{n}{suffix}") == pytest.approx(n * factor, rel=1e-15)


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False))
def test_parse_quantity_accepts_repr_of_floats(x):
    assert parse_quantity(repr(x)) == x and parse_quantity(x) == x

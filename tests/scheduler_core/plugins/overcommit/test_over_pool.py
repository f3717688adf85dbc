"""overcommit's copy-free pool check (`over_pool`) names the same dimensions as the Resource
arithmetic it stands for, on random pools and requests (fractions, missing scalars, zeros)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.plugins.overcommit.overcommit import over_pool
from scheduler_core.resources import Resource
from tests.conftest import profiled

VALUES = st.one_of(st.sampled_from([0.0, 0.05, 0.1, 1.0, 999.95, 1000.0, 4000.0]),
                   st.floats(min_value=-1e6, max_value=1e12, allow_nan=False))
SCALARS = st.dictionaries(st.sampled_from(["nvidia.com/gpu", "example.com/fpga"]), VALUES, max_size=2)
RESOURCES = st.builds(lambda c, m, s: Resource(c, m, s), VALUES, VALUES, SCALARS)


@settings(profiled(settings(max_examples=300)))
@given(RESOURCES, RESOURCES, RESOURCES)
def test_over_pool_names_what_the_resource_check_names(inqueue, min_req, idle):
    ok, names = inqueue.clone().add(min_req).less_equal_with_dimension_and_resources_name(idle, min_req)
    assert over_pool(inqueue, min_req, idle) == names
    assert not names if ok else names

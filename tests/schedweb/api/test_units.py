"""Pure conversions: stored units to API numbers and manifest quantities, Go durations."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from schedweb.api.manifests import format_duration, parse_duration
from schedweb.api.units import to_api, to_quantities


@pytest.mark.parametrize(("stored", "api", "quantities"), [
    ({"cpu": 500.0, "memory": 2**30}, {"cpu": 0.5, "memory": 2**30}, {"cpu": "500m", "memory": "1Gi"}),
    ({"cpu": 4000, "memory": 1000}, {"cpu": 4, "memory": 1000}, {"cpu": "4", "memory": "1000"}),
    ({"memory": 3 * 2**20, "pods": 110}, {"memory": 3 * 2**20, "pods": 110}, {"memory": "3Mi", "pods": 110}),
    ({"nvidia.com/gpu": 2000}, {"nvidia.com/gpu": 2}, {"nvidia.com/gpu": "2"}),
    ({"cpu": 0.5}, {"cpu": 0.0005}, {"cpu": "0.0005"}),
    ({}, {}, {}),
])
def test_unit_conversions(stored, api, quantities):
    assert to_api(stored) == api
    assert to_quantities(stored) == quantities


def test_none_stays_none():
    assert to_api(None) is None and to_quantities(None) is None


@pytest.mark.parametrize(("text", "seconds"), [
    ("1h30m", 5400.0), ("90s", 90.0), ("1h0m0s", 3600.0), ("1.5h", 5400.0), ("250ms", 0.25),
    ("600", 600.0), (42, 42.0),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize("text", ["", "soon", "1d", "h"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValidationError) as info:
        parse_duration(text, "spec.x")
    assert list(info.value.message_dict) == ["spec.x"]


@pytest.mark.parametrize(("seconds", "text"), [(5400, "1h30m0s"), (90, "1m30s"), (5, "5s"), (0.5, "0.5s")])
def test_format_duration_round_trips(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text, "x") == seconds

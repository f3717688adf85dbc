"""Names, taints and quantities as Kubernetes admits them (scheduler_core.shapes_names,
shapes_taints, resources.admit_quantity): the one validator behind the API, forms, manifests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core import shapes
from scheduler_core.resources import MAX_STORED_QUANTITY, QuantityError, admit_quantity, parse_quantity


@pytest.mark.parametrize("name", ["a", "job-1", "a.b", "tf-mnist.v2", "0", "x" * 253])
def test_subdomain_names_pass(name):
    assert shapes.check_subdomain_name(name, "name") == name


@pytest.mark.parametrize(("name", "why"), [
    ("Upper_Case", "not a lowercase RFC 1123 subdomain"), ("a..b", "not a lowercase RFC 1123 subdomain"),
    ("Node_1", "not a lowercase RFC 1123 subdomain"), ("-a", "not a lowercase"), ("a-", "not a lowercase"),
    ("a.", "not a lowercase"), ("x" * 254, "254 characters; at most 253"),
    ("name\n", "control character U+000A is not allowed"), ("", "required"),
])
def test_other_names_are_refused(name, why):
    with pytest.raises(shapes.ShapeError) as caught:
        shapes.check_subdomain_name(name, "name")
    assert why in caught.value.message and caught.value.path == "name"


def test_labels_and_pod_names():
    assert shapes.check_label_name("worker", "t") == "worker"
    with pytest.raises(shapes.ShapeError, match="not a lowercase RFC 1123 label"):
        shapes.check_label_name("a.b", "t")
    assert shapes.check_pod_name("x" * 63, "t")
    with pytest.raises(shapes.ShapeError, match="64 characters; at most 63"):
        shapes.check_pod_name("x" * 64, "t")
    assert shapes.pod_name("job", "worker", 3) == "job-worker-3"


@given(st.text(alphabet="abcXYZ09-._\n ", min_size=1, max_size=20))
def test_an_accepted_name_is_what_kubernetes_accepts(text):
    import re

    try:
        shapes.check_subdomain_name(text, "name")
    except shapes.ShapeError:
        accepted = False
    else:
        accepted = True
    kubernetes = re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", text)
    assert accepted == bool(kubernetes)


def test_taints_unique_by_key_and_effect_with_time_added():
    taints = [{"key": "gpu", "value": "a", "effect": "NoSchedule"},
              {"key": "gpu", "effect": "NoExecute", "timeAdded": "2024-01-02T15:04:05Z"}]
    assert shapes.check_taints(taints, "taints") == [
        {"key": "gpu", "value": "a", "effect": "NoSchedule"},
        {"key": "gpu", "value": "", "effect": "NoExecute", "timeAdded": "2024-01-02T15:04:05Z"}]
    with pytest.raises(shapes.ShapeError) as caught:
        shapes.check_taints(taints + [{"key": "gpu", "value": "b", "effect": "NoSchedule"}], "taints")
    assert caught.value.path == "taints[2]"
    assert "taints must be unique by key and effect (gpu:NoSchedule)" in caught.value.message
    with pytest.raises(shapes.ShapeError) as caught:
        shapes.check_taints([{"key": "k", "effect": "NoExecute", "timeAdded": "yesterday"}], "taints")
    assert caught.value.path == "taints[0].timeAdded"


@pytest.mark.parametrize(("name", "text", "stored"), [
    ("cpu", "0.0001", 1.0), ("cpu", "1n", 1.0), ("cpu", "1500u", 2.0), ("cpu", "250m", 250.0),
    ("cpu", "2", 2000.0), ("memory", "0.5", 1.0), ("memory", "1Ki", 1024.0), ("memory", "1500m", 2.0),
    ("nvidia.com/gpu", "2", 2000.0), ("ephemeral-storage", "0.5", 500.0), ("pods", "110", 110.0),
])
def test_quantities_round_up_to_the_smallest_unit(name, text, stored):
    assert admit_quantity(name, text) == stored


@pytest.mark.parametrize(("name", "value", "why"), [
    ("nvidia.com/gpu", "500m", "extended resource quantities are whole numbers"),
    ("example.com/foo", 1.5, "extended resource quantities are whole numbers"),
    ("cpu", "9223372036854775807m", "out of range"),      # 2^63-1 milli-cpu is 2^63 as a float
    ("memory", "9223372036854775807", "out of range"),
    ("memory", "8Ei", "out of range"),
])
def test_quantities_kubernetes_refuses(name, value, why):
    with pytest.raises(QuantityError, match=why):
        admit_quantity(name, value)


def test_the_largest_stored_amount_stays_within_int64():
    assert admit_quantity("memory", "9223372036854774784") <= MAX_STORED_QUANTITY
    assert parse_quantity("3n") == pytest.approx(3e-9) and parse_quantity("2u") == pytest.approx(2e-6)

"""Hostile input for the scheduler core's parsers (hypothesis): the quantity parser, the Volcano
conf parser and the scenario loader either succeed or raise their documented error type
(QuantityError / ConfError / ScenarioError), never anything else."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.framework.conf import ConfError, SchedulerConf, parse_conf
from scheduler_core.resources import QuantityError, parse_quantity
from scheduler_core.scenario import Scenario, load_scenario
from scheduler_core.scenario_fields import ScenarioError

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON/YAML-like values, including the awkward ones: huge ints, NaN/inf, empty and odd strings.
scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["", "1e999", "-1", "500m", "1Gi", "NaN", "~", "0x10", "1e-999", "٣", "1_000"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=10)
# Text shaped like quantities: sign, digits, dot, exponent, suffix, in any order and count.
quantity_texts = st.lists(st.sampled_from(list("+-.0123456789eEkKMGTPim ")) | st.sampled_from(
    ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E", "e308", "e-400", "99999999999"]),
    max_size=8).map("".join)


@FUZZ
@given(st.one_of(quantity_texts, st.text(max_size=30), scalars, values))
def test_parse_quantity_only_raises_quantity_error(value: Any):
    for allow_negative in (False, True):
        try:
            result = parse_quantity(value, allow_negative=allow_negative)
        except QuantityError:
            continue
        assert isinstance(result, float) and math.isfinite(result), (value, result)
        assert allow_negative or result >= 0


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indexes) into a loaded YAML tree, the root included."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _paths(child, (*prefix, i))
    return found


def _mutated(data: Any, draw) -> Any:
    """`data` with one subtree replaced by a random value, deleted, or given an extra key."""
    path = draw(st.sampled_from(_paths(data)))
    if not path:
        return draw(values)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    how = draw(st.sampled_from(["replace", "delete", "extra"]))
    if how == "replace" or (how == "extra" and not isinstance(parent, dict)):
        parent[path[-1]] = draw(values)
    elif how == "delete":
        del parent[path[-1]]
    else:
        parent[draw(st.text(max_size=8))] = draw(values)
    return data


VALID_CONF = {"actions": "enqueue, allocate, backfill, preempt, reclaim",
              "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}]},
                        {"plugins": [{"name": "drf"}, {"name": "predicates"},
                                     {"name": "proportion", "arguments": {"x": 1}}]}],
              "configurations": [{"name": "enqueue", "arguments": {"overcommit-factor": 1.2}}]}


@FUZZ
@given(st.data())
def test_parse_conf_only_raises_conf_error(data):
    source = data.draw(st.one_of(
        st.text(max_size=200),
        st.just(json.loads(json.dumps(VALID_CONF))).map(lambda conf: _mutated(conf, data.draw)),
        values,
    ))
    for form in (source, yaml.safe_dump(source) if not isinstance(source, str) else source):
        with contextlib.suppress(ConfError):
            assert isinstance(parse_conf(form), SchedulerConf)


SEEDS = sorted(SCENARIOS.glob("*.yaml"))


@FUZZ
@given(st.data())
def test_load_scenario_only_raises_scenario_error(data):
    seed = data.draw(st.sampled_from(SEEDS))
    tree = _mutated(yaml.safe_load(seed.read_text()), data.draw)
    as_json = data.draw(st.booleans())
    try:
        text = json.dumps(tree) if as_json else yaml.safe_dump(tree, allow_unicode=True)
    except (TypeError, ValueError):
        return  # not representable (e.g. non-string keys in JSON): nothing to feed
    with contextlib.suppress(ScenarioError):
        assert isinstance(load_scenario(text, filename="fuzz.json" if as_json else "fuzz.yaml"), Scenario)


@FUZZ
@given(st.text(max_size=300))
def test_load_scenario_raw_text_only_raises_scenario_error(text: str):
    with contextlib.suppress(ScenarioError):
        load_scenario(text, filename="fuzz.yaml")


# Inputs the fuzzers once found crashing (TypeError), kept as fixed regression cases.
@pytest.mark.parametrize("text,message", [
    ("?", "unknown key(s): None; actions: missing"),
    ("{actions: allocate, 3: x}", "unknown key(s): 3"),
    ("actions: allocate\nconfigurations: [{name: allocate, 5: 1}]", "configurations[0]: unknown key(s) 5"),
])
def test_conf_with_non_string_keys_is_a_conf_error(text: str, message: str):
    with pytest.raises(ConfError) as err:
        parse_conf(text)
    assert str(err.value) == message


@pytest.mark.parametrize("section,value", [("binds", []), ("binds", {"n": 1}), ("evictions", [[1]]),
                                           ("job_phase", [])])
def test_scenario_expect_with_non_string_values_is_a_scenario_error(section: str, value: Any):
    tree = yaml.safe_load((SCENARIOS / "preempt-lower-priority.yaml").read_text())
    task = next(t["name"] for j in tree["jobs"] for t in j["tasks"])
    job = tree["jobs"][0]
    namespace = job.get("namespace", "default")
    tree["expect"] = {"binds": {f"{namespace}/{task}": value}, "evictions": value,
                      "job_phase": {f"{namespace}/{job['name']}": value}}
    tree["expect"] = {section: tree["expect"][section]}
    with pytest.raises(ScenarioError):
        load_scenario(yaml.safe_dump(tree), filename="regression.yaml")

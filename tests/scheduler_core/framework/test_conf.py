"""Configuration parsing: Volcano's conf shape, switches, and errors that list every problem."""

from __future__ import annotations

import pytest

from scheduler_core.framework.conf import DEFAULT_CONF, ConfError, PluginOption, parse_conf

VOLCANO_CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enabledJobOrder: false
  - name: predicates
  - name: capacity
    enabledHierarchy: true
  - name: nodeorder
    arguments:
      leastrequested.weight: 2
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: false
"""


def test_parses_volcano_conf():
    c = parse_conf(VOLCANO_CONF)
    assert c.actions == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
    assert [[p.name for p in t.plugins] for t in c.tiers] == [
        ["priority", "gang", "conformance"], ["drf", "predicates", "capacity", "nodeorder"]]
    assert c.plugin("gang").flags == {"enabledPreemptable": False}
    assert c.plugin("nodeorder").arguments == {"leastrequested.weight": 2}
    assert c.configurations == {"preempt": {"enableTopologyAwarePreemption": False}}


@pytest.mark.parametrize("flags,query,expected", [
    ({}, "enabledJobOrder", True),
    ({"enabledJobOrder": False}, "enabledJobOrder", False),
    ({"enabledJobOrder": False}, "enableJobOrder", False),  # either spelling queries it
    ({}, "enableHierarchy", False),  # the one switch that is off when absent
    ({"enableHierarchy": True}, "enabledHierarchy", True),
    ({}, "enablePreemptive", True),
])
def test_plugin_option_enabled(flags, query, expected):
    assert PluginOption("x", flags=flags).enabled(query) is expected


@pytest.mark.parametrize("key", ["enableHierarchy", "enabledHierarchy"])
def test_hierarchy_accepts_both_spellings(key):
    c = parse_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "capacity", key: True}]}]})
    assert c.plugin("capacity").flags == {"enableHierarchy": True}
    assert c.plugin("capacity").enabled("enableHierarchy") is True


def test_actions_as_list():
    assert parse_conf({"actions": ["allocate", "backfill"], "tiers": []}).actions == ["allocate", "backfill"]


def test_errors_list_every_problem():
    text = """
actions: "enqueue, allocat, shuffle"
colour: blue
tiers:
- plugins:
  - name: gang
    enableJobOrdr: true
  - name: magic
  - name: predicates
    enablePredicate: "yes"
configurations:
- name: teleport
"""
    with pytest.raises(ConfError) as info:
        parse_conf(text)
    assert info.value.problems == [
        "unknown key(s): colour",
        "unknown action(s): allocat, shuffle",
        "tiers[0].plugins[0] (gang): unknown key enableJobOrdr",
        "tiers[0].plugins[2] (predicates): enablePredicate must be true or false",
        "unknown plugin(s): magic",
        "configurations: unknown action teleport",
    ]


@pytest.mark.parametrize("source,problem", [
    ("actions: [", "invalid YAML"),
    ("- a\n- b\n", "configuration must be a mapping"),
    ({"tiers": []}, "actions: missing"),
    ({"actions": ""}, "actions: no action configured"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {"name": "gang"}]}]},
     "plugin gang configured twice"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"arguments": {}}]}]}, "missing plugin name"),
])
def test_malformed_configurations(source, problem):
    with pytest.raises(ConfError, match=problem):
        parse_conf(source)


def test_default_conf_is_volcanos():
    assert DEFAULT_CONF.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in DEFAULT_CONF.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"]]


def test_to_dict_round_trips():
    c = parse_conf(VOLCANO_CONF)
    again = parse_conf(c.to_dict())
    assert again.to_dict() == c.to_dict()
    assert again.plugin("capacity").enabled("enableHierarchy") is True

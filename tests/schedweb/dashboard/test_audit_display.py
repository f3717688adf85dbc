"""An audit diff in human units, one row per changed field or resource dimension (no database)."""

from __future__ import annotations

import pytest

from schedweb.dashboard.audit_display import DiffRow, diff_rows

GIB = 2**30


@pytest.mark.parametrize(("object_type", "diff", "rows"), [
    # A resource map changed on some dimensions: one row each, the rest untouched.
    ("queue", {"capability": {"before": {"cpu": 96000.0, "memory": 1536 * GIB},
                              "after": {"cpu": 96000.0, "memory": 2048 * GIB, "nvidia.com/gpu": 8000.0}}},
     [DiffRow("capability: memory", "1.5 TiB", "2 TiB"), DiffRow("capability: GPU", "unset", "8 GPUs")]),
    # Set or unset as a whole: the map in words.
    ("queue", {"guarantee": {"before": None, "after": {"cpu": 500.0, "memory": 512 * 2**20}}},
     [DiffRow("guarantee", "unset", "0.5 cores, 512 MiB of memory")]),
    ("queue", {"deserved": {"before": {"cpu": 1000.0}, "after": None}},
     [DiffRow("deserved", "1 core", "unset")]),
    ("node", {"allocatable": {"before": {"cpu": 32000.0, "pods": 110},
                              "after": {"cpu": 32000.0, "pods": 64}}},
     [DiffRow("allocatable: pods", "110", "64")]),
    ("namespace_quota", {"hard": {"before": {"cpu": 40000.0}, "after": {"cpu": 48000.0}}},
     [DiffRow("hard: cpu", "40 cores", "48 cores")]),
    # Everything else: as it is, flags yes/no, lists joined, absent a dash; fields by name.
    ("queue", {"weight": {"before": 1, "after": 3}, "reclaimable": {"before": True, "after": False},
               "admin_users": {"before": [], "after": ["alice", "bob"]},
               "parent": {"before": None, "after": "org"}},
     [DiffRow("admin_users", "none", "alice, bob"), DiffRow("parent", "\u2014", "org"),
      DiffRow("reclaimable", "yes", "no"), DiffRow("weight", "1", "3")]),
    # Same field name on an object type without resource maps: not read as one.
    ("priority_class", {"value": {"before": 100.0, "after": 1000.0}}, [DiffRow("value", "100", "1000")]),
    ("queue", "not a diff", []),
])
def test_diff_rows(object_type, diff, rows):
    assert diff_rows(object_type, diff) == rows



def test_a_text_of_several_lines_becomes_a_line_diff():
    before = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: priority\n"
    after = "actions: enqueue, allocate, backfill\ntiers:\n- plugins:\n  - name: gang\n  - name: priority\n"
    rows = diff_rows("scheduler_config", {"yaml": {"before": before, "after": after},
                                          "version": {"before": 1, "after": 2}})
    assert rows[0] == DiffRow("version", "1", "2")
    assert rows[1].field == "yaml"
    assert rows[1].lines == [("@", "@@ -1,3 +1,3 @@"), ("-", "actions: enqueue, allocate"),
                             ("+", "actions: enqueue, allocate, backfill"),
                             (" ", "tiers:"), (" ", "- plugins:")]
    # A configuration set for the first time: every line added.
    [first] = diff_rows("scheduler_config", {"yaml": {"before": None, "after": "a: 1\nb: 2\n"}})
    assert first.lines == [("@", "@@ -0,0 +1,2 @@"), ("+", "a: 1"), ("+", "b: 2")]

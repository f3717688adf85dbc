"""The scenario key `sharding:` (docs/scenario-format.md): read into a Sharding, bad input as
FILE:LINE: message (exit 2), and `simulate --json` showing the view."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from scheduler_core import __main__ as cli
from scheduler_core.framework.sharding import Sharding
from scheduler_core.scenario import ScenarioError, load_scenario

HEAD = """\
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: "8Gi"}}
  - {name: n2, allocatable: {cpu: "8", memory: "8Gi"}}
queues:
  - {name: default}
jobs:
  - {name: j, namespace: ns, phase: Inqueue, tasks: [{name: t, request: {cpu: "6"}}]}
"""  # 7 lines: the sharding block below starts at line 8


def load(block: str):
    return load_scenario(HEAD + textwrap.dedent(block), filename="s.yaml")


def test_the_block_becomes_a_sharding():
    scenario = load("sharding:\n  mode: hard\n  shard_name: shard-a\n  nodes_in_shard: [n2, n1]\n")
    assert scenario.sharding == Sharding("hard", "shard-a", frozenset({"n1", "n2"}))
    assert load("sharding: {}\n").sharding == Sharding()
    assert load("").sharding is None


@pytest.mark.parametrize(("block", "line", "message"), [
    ("sharding:\n  mode: firm\n", 9,
     "sharding.mode: invalid value 'firm' (expected one of: none, hard, soft)"),
    ("sharding:\n  mode: hard\n  nodes_in_shard: [n1, n9]\n", 10,
     "sharding.nodes_in_shard[1]: unknown node 'n9'"),
    ("sharding:\n  nodes_in_shard:\n    - n1\n    - n1\n", 11,
     "sharding.nodes_in_shard[1]: node 'n1' listed twice"),
    ("sharding:\n  nodes_in_shard: n1\n", 9, "sharding.nodes_in_shard: expected a list, got str"),
    ("sharding:\n  nodes_in_shard: [3]\n", 9, "sharding.nodes_in_shard[0]: expected a node name, got 3"),
    ("sharding:\n  shard_name: 7\n", 9, "sharding.shard_name: expected a non-empty string, got int"),
    ("sharding:\n  mode: soft\n  shards: [a]\n", 10, "sharding.shards: unknown key 'shards'"),
    ("sharding: [hard]\n", 8, "sharding: expected a mapping, got list"),
])
def test_bad_input_names_the_line(block, line, message):
    with pytest.raises(ScenarioError) as info:
        load(block)
    assert info.value.line == line
    assert message in str(info.value)


def _simulate(tmp_path: Path, block: str, *argv: str) -> tuple[int, str, str]:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + textwrap.dedent(block))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["simulate", str(path), *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_simulate_exits_2_with_file_and_line(tmp_path: Path):
    code, out, err = _simulate(tmp_path, "sharding:\n  mode: hard\n  nodes_in_shard: [n7]\n")
    assert (code, out) == (2, "")
    assert err == f"{tmp_path / 's.yaml'}:10: sharding.nodes_in_shard[0]: unknown node 'n7'\n"


def test_simulate_json_shows_the_view_and_the_reason_quotes_the_fit_error(tmp_path: Path):
    code, out, _ = _simulate(tmp_path, "sharding:\n  mode: hard\n  shard_name: a\n  nodes_in_shard: [n1]\n",
                             "--json")
    assert code == 0
    data = json.loads(out)
    assert data["sharding"] == {"mode": "hard", "shard_name": "a", "nodes_in_shard": ["n1"],
                                "placed_outside_shard": {}}
    assert data["binds"] == {}
    assert data["reasons"]["ns/j"]["message"] == (
        "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node isn't in scheduler node shard.")
    code, out, _ = _simulate(tmp_path, "sharding:\n  mode: soft\n  shard_name: a\n  nodes_in_shard: [n1]\n",
                             "--json")
    assert json.loads(out)["sharding"]["placed_outside_shard"] == {"ns/t": "n2"}
    code, out, _ = _simulate(tmp_path, "", "--json")
    assert "sharding" not in json.loads(out)  # no key, no view: the output is as before


def test_the_summary_names_the_shard(tmp_path: Path):
    code, out, _ = _simulate(tmp_path, "sharding:\n  mode: soft\n  shard_name: a\n  nodes_in_shard: [n1]\n")
    assert code == 0
    assert out.splitlines()[1] == "Sharding: mode soft, shard a (1 node), 1 placed outside it"

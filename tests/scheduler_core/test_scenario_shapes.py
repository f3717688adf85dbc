"""The scenario loader checks Kubernetes shapes, quantities and durations with scheduler_core.shapes:
`FILE:LINE: path: message` (exit 2 from the CLI), the same paths and words as the API."""

from __future__ import annotations

import io
import json

import pytest

from scheduler_core import __main__ as cli
from tests.scheduler_core.test_scenario import HEAD, JOB, error_of

NA = "nodeAffinity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
TASK = "jobs[0].tasks[0]"
AFF = f"{TASK}.affinity.{NA}.{REQ}"


def task(key: str, value: object) -> str:
    """A scenario whose only task (line 9) has `key: value` (line 10; JSON is flow-style YAML)."""
    return HEAD + JOB + f"      - name: t\n        {key}: {json.dumps(value)}\n"


def terms(value: object) -> dict:
    """An affinity whose required node affinity has `value` as nodeSelectorTerms."""
    return {NA: {REQ: {"nodeSelectorTerms": value}}}


CASES = [
    # (id, text, line, message)
    ("required not a mapping", task("affinity", {NA: {REQ: "x"}}), 10, f"{AFF}: expected a mapping"),
    ("terms not a list", task("affinity", terms("x")), 10, f"{AFF}.nodeSelectorTerms: expected a list"),
    ("expressions not a list", task("affinity", terms([{"matchExpressions": "x"}])), 10,
     f"{AFF}.nodeSelectorTerms[0].matchExpressions: expected a list"),
    ("values a number", task("affinity", terms([{"matchExpressions": [{"key": "a", "operator": "In",
                                                                       "values": 5}]}])), 10,
     f"{AFF}.nodeSelectorTerms[0].matchExpressions[0].values: expected a list"),
    ("nodeAffinity a list", task("affinity", {NA: [1]}), 10, f"{TASK}.affinity.{NA}: expected a mapping"),
    ("spread without key", task("topology_spread_constraints", [{"maxSkew": 1,
                                                                 "whenUnsatisfiable": "DoNotSchedule"}]),
     10, f"{TASK}.topology_spread_constraints[0].topologyKey: required"),
    ("bad label value", task("labels", {"app": "a b"}), 10,
     f"{TASK}.labels.app: 'a b' is not a valid label value"),
    ("toleration without key", task("tolerations", [{"operator": "Equal", "value": "x"}]), 10,
     f"{TASK}.tolerations[0].operator: must be Exists when key is empty"),
    ("cpu 1e308", task("request", {"cpu": "1e308"}), 10,
     f"{TASK}.request.cpu: quantity 1e+308 is out of range: above 9223372036854775807 milli-units"),
    ("gpu 1e306", task("request", {"nvidia.com/gpu": 1e306}), 10,
     f"{TASK}.request.nvidia.com/gpu: quantity 1e+306 is out of range"),
    ("html resource name", task("request", {"<b>x</b>": 1}), 10,
     f"{TASK}.request.<b>x</b>: '<b>x</b>' is not a qualified name"),
    ("node cpu 2e305", "nodes:\n  - {name: n1, allocatable: {cpu: 2e305}}\n", 2,
     "nodes[0].allocatable.cpu: quantity 2e+305 is out of range"),
    ("sla beyond a year", HEAD + "jobs:\n  - name: j\n    queue: q\n    sla_waiting_time: 9000h\n", 8,
     "jobs[0].sla_waiting_time: must be between 0 and 3.16224e+07 seconds (366 days), got 32400000.0"),
    ("sla infinite", HEAD + "jobs:\n  - name: j\n    queue: q\n    sla_waiting_time: .inf\n", 8,
     "jobs[0].sla_waiting_time: must be between 0 and 3.16224e+07 seconds (366 days), got inf"),
]


@pytest.mark.parametrize(("text", "line", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_shape_errors_name_the_line_and_path(text: str, line: int, message: str) -> None:
    err = error_of(text)
    assert (err.filename, err.line) == ("s.yaml", line), err.message
    assert err.message.startswith(message), err.message


def test_cli_exits_2_on_a_poison_affinity(tmp_path) -> None:
    path = tmp_path / "poison.yaml"
    path.write_text(task("affinity", {NA: {REQ: "x"}}))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["simulate", str(path)], stdout=out, stderr=err)
    assert (code, out.getvalue(), err.getvalue()) == (2, "", f"{path}:10: {AFF}: expected a mapping\n")

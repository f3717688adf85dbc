"""`schedctl why` shows the node scores of the job's newest recorded placements (issue 17 rule 9).

The live cluster is tests/schedweb/scheduling/test_placement_scores.py's: the 2 cpu / 4Gi task goes
to n1 at 550 (binpack 100, nodeorder 450) ahead of n0 (525) and n2 (524).
"""

from __future__ import annotations

import json

import pytest

from schedctl.why import explain, why_text
from schedweb.scheduling.cycle import cycle_run
from tests.schedweb.scheduling.test_placement_scores import N0, N1, N2, submit, three_nodes

JOB = {"id": 7, "namespace": "ns", "name": "solo", "queue": "q", "phase": "Inqueue", "min_member": 1,
       "reason": None, "reason_details": {}, "tasks": [{"name": "solo-0", "status": "Binding", "node": "n1"}]}
PLACEMENTS = {"job": 7, "uid": "ns/solo", "note": "", "count": 1, "next": None, "previous": None,
              "results": [{"task": "solo-0", "node": "n1", "pipelined": False, "action": "allocate",
                           "cycle": 3, "cycle_started": "2026-11-24T12:00:00Z", "chosen_scores": N1,
                           "top": [N1, N0, N2]}]}
SCORE_LINES = [
    "Why these nodes (newest recorded placements):",
    "TASK     NODE          SCORES",
    "solo-0   n1 (chosen)   binpack 100, nodeorder 450: total 550",
    "solo-0   n0            binpack 50, nodeorder 475: total 525",
    "solo-0   n2            binpack 75, nodeorder 449: total 524",
]


def test_why_text_lists_the_chosen_node_then_the_others():
    info = explain(JOB, None, PLACEMENTS)
    assert (info["placements"], info["placements_note"]) == (PLACEMENTS["results"], "")
    assert why_text(info).split("\n\n")[-1].splitlines() == SCORE_LINES


@pytest.mark.parametrize(("placements", "last"), [
    pytest.param({**PLACEMENTS, "results": [], "count": 0, "note": "scores not recorded: a burst of 4 tasks "
                  "was placed"}, "Why these nodes: scores not recorded: a burst of 4 tasks was placed",
                 id="note"),
    pytest.param({**PLACEMENTS, "results": [], "count": 0}, None, id="nothing-recorded"),
    pytest.param(None, None, id="older-server"),
])
def test_why_text_without_recorded_scores(placements, last):
    text = why_text(explain(JOB, None, placements))
    assert ("Why these nodes" in text) is (last is not None)
    if last is not None:
        assert text.split("\n\n")[-1] == last


@pytest.mark.django_db(transaction=True)
def test_why_asks_the_server(server):
    three_nodes()
    submit("solo")
    cycle_run()
    done = server.run("why", "ns/solo")
    assert (done.code, done.err) == (0, "")
    assert done.out.rstrip("\n").split("\n\n")[-1].splitlines() == SCORE_LINES
    info = json.loads(server.run("why", "ns/solo", "-o", "json").out)
    assert [(p["task"], p["node"], p["chosen_scores"], p["top"]) for p in info["placements"]] == \
        [("solo-0", "n1", N1, [N1, N0, N2])]

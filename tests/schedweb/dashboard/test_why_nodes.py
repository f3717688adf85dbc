"""The job page's "Why these nodes" and GET .../placements/ (issue 17 rule 9): the same records.

The cluster and the hand-computed scores are tests/schedweb/scheduling/test_placement_scores.py's:
one 2 cpu / 4Gi task on n0 (8 cpu, 16Gi), n1 (4, 8Gi), n2 (4, 16Gi) under nodeorder + binpack
(weight 2) goes to n1 at 550 (binpack 100, nodeorder 450); n0 scores 525 (50, 475), n2 524 (75, 449).
"""

from __future__ import annotations

import html
import re

import pytest
from rest_framework.test import APIClient

from schedweb.scheduling.cycle import cycle_run
from tests.schedweb.scheduling.conftest import requires_postgres
from tests.schedweb.scheduling.test_placement_scores import N0, N1, N2, submit, three_nodes

pytestmark = [pytest.mark.django_db, requires_postgres]

HINTS = [
    "binpack rewards fuller nodes: the share of the node's cpu and memory (and weighted scalars) used once "
    "the task lands.",
    "nodeorder rewards emptier nodes (leastrequested), even cpu/memory use (balancedresource), preferred "
    "node labels (nodeaffinity), no untolerated PreferNoSchedule taints (tainttoleration), spread over "
    "topology domains (podtopologyspread).",
]


def _text(markup: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def _section(html: str) -> str | None:
    found = re.search(r'<section class="card" id="why-nodes">(.*?)</section>', html, re.S)
    return found.group(1) if found else None


def _page(client, job: str) -> str:
    response = client.get(f"/jobs/ns/{job}/")
    assert response.status_code == 200
    return response.content.decode()


def _iso(t) -> str:
    return t.isoformat().replace("+00:00", "Z")


def test_the_page_shows_the_chosen_node_and_the_runners_up(users, client_as):
    three_nodes()
    submit("solo")
    run = cycle_run()
    section = _section(_page(client_as(users["viewer"]), "solo"))
    assert section is not None and "style=" not in section  # the CSP: classes and data-w only
    task = re.search(r'<div class="why-task" data-task="solo-0" data-node="n1">(.*?)</div>\s*\n',
                     section, re.S)
    assert _text(re.search(r'<p class="why-head">(.*?)</p>', task.group(1), re.S).group(1)) == \
        f"solo-0 → n1 allocate, cycle {run.pk} at {run.started:%Y-%m-%d %H:%M:%S} UTC"
    assert _text(re.search(r'<p class="why-chosen">(.*?)</p>', section, re.S).group(1)) == \
        "Chosen n1: binpack 100, nodeorder 450: total 550"
    rows = re.findall(r'<tr data-node="([^"]+)" data-total="([^"]+)"( class="chosen")?><td>(.*?)</td>'
                      r'<td>(.*?)</td><td><div class="bar small"><span class="alloc" data-w="([^"]+)">',
                      section)
    assert [(node, total, bool(chosen), _text(cell), words, w)
            for node, total, chosen, cell, words, w in rows] == [
        ("n1", "550", True, "n1 chosen", "binpack 100, nodeorder 450: total 550", "100.0"),
        ("n0", "525", False, "n0", "binpack 50, nodeorder 475: total 525", "95.5"),  # 525 / 550
        ("n2", "524", False, "n2", "binpack 75, nodeorder 449: total 524", "95.3"),
    ]
    assert _text(re.search(r'<p class="small muted why-runners">(.*?)</p>', section, re.S).group(1)) == \
        "Runners-up: n0: binpack 50, nodeorder 475: total 525; n2: binpack 75, nodeorder 449: total 524"
    assert [_text(li) for li in re.findall(r"<li>(.*?)</li>", section, re.S)] == HINTS


def test_a_burst_says_why_there_are_no_scores(settings, users, client_as):
    settings.SCHEDULER_RECORD_SCORES_MAX_PENDING = 3
    three_nodes()
    submit("wide", tasks=4, cpu="1", memory="1Gi")
    run = cycle_run()
    assert (run.binds, run.scores_recorded) == (4, False)
    section = _section(_page(client_as(users["viewer"]), "wide"))
    assert _text(re.search(r'<p class="muted" id="why-nodes-note">(.*?)</p>', section, re.S).group(1)) == (
        f"Scores not recorded: a burst of 4 tasks was placed (cycle {run.pk}: 4 tasks were waiting, "
        "more than the 3 above which a cycle records no scores).")
    assert 'class="why-task"' not in section


def test_no_section_for_a_job_never_placed(users, client_as):
    three_nodes()
    submit("huge", cpu="64")
    cycle_run()
    assert _section(_page(client_as(users["viewer"]), "huge")) is None


def test_the_page_shows_ten_tasks_and_counts_the_rest(settings, users, client_as):
    settings.SCHEDULER_RECORD_SCORES_PER_JOB = 12
    three_nodes()
    submit("many", tasks=12, cpu="250m", memory="256Mi")
    assert cycle_run().binds == 12
    section = _section(_page(client_as(users["viewer"]), "many"))
    assert len(re.findall(r'class="why-task"', section)) == 10
    more = re.search(r'<p class="muted small" id="why-nodes-more">(.*?)</p>', section, re.S)
    assert _text(more.group(1)) == \
        f"2 more recorded tasks: GET /api/v1/jobs/{_job_id('many')}/placements/."


def _job_id(name: str) -> int:
    from schedweb.core.models import Job

    return Job.objects.get(name=name).pk


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_answers_the_same_records(users):
    three_nodes()
    job = submit("solo")
    run = cycle_run()
    expected = {"job": job.pk, "uid": "ns/solo", "note": "", "count": 1, "next": None, "previous": None,
                "continue": None,
                "results": [{"task": "solo-0", "node": "n1", "pipelined": False, "action": "allocate",
                             "cycle": run.pk, "cycle_started": _iso(run.started), "chosen_scores": N1,
                             "top": [N1, N0, N2]}]}
    client = _api(users["viewer"])
    for path in (f"/api/v1/jobs/{job.pk}/placements/", "/api/v1/namespaces/ns/jobs/solo/placements/"):
        response = client.get(path)
        assert (response.status_code, response.json()) == (200, expected)


def test_the_api_pages_and_notes(settings, users):
    three_nodes()
    pair = submit("pair", tasks=2)
    cycle_run()
    client = _api(users["viewer"])
    body = client.get(f"/api/v1/jobs/{pair.pk}/placements/?limit=1").json()
    assert (body["count"], [r["task"] for r in body["results"]], body["previous"]) == (2, ["pair-0"], None)
    assert body["next"] == f"http://testserver/api/v1/jobs/{pair.pk}/placements/?continue={body['continue']}&limit=1"
    settings.SCHEDULER_RECORD_SCORES = 0
    off = submit("off", cpu="1", memory="1Gi")
    run = cycle_run()
    body = client.get("/api/v1/namespaces/ns/jobs/off/placements/").json()
    assert (body["job"], body["note"], body["count"], body["results"]) == (
        off.pk, f"scores not recorded: recording was off in cycle {run.pk}, which placed it", 0, [])


def test_the_api_refuses_bad_requests(users):
    client = _api(users["viewer"])
    response = client.get("/api/v1/jobs/424242/placements/")
    assert (response.status_code, response.json()["error"]["message"]) == (404, "No job with id 424242.")
    assert client.get("/api/v1/jobs/99999999999999999999/placements/").status_code == 404
    response = client.get("/api/v1/namespaces/ns/jobs/nope/placements/")
    assert (response.status_code, response.json()["error"]["message"]) == (404, "No job ns/nope.")
    three_nodes()
    job = submit("solo")
    response = client.get(f"/api/v1/jobs/{job.pk}/placements/?limit=x")
    assert (response.status_code, response.json()["error"]["fields"]) == (
        400, {"limit": ["Expected a whole number of at least 1, not 'x'."]})
    assert APIClient().get(f"/api/v1/jobs/{job.pk}/placements/").status_code == 401


def test_without_a_scoring_plugin_the_first_fitting_node_wins(users, client_as):
    from tests.schedweb.scheduling.conftest import make_cluster
    from tests.schedweb.scheduling.conftest import submit as submit_simple

    make_cluster(nodes=2, cpu="4")  # SIMPLE_CONF: no binpack, nodeorder or usage
    submit_simple("plain")
    cycle_run()
    section = _section(_page(client_as(users["viewer"]), "plain"))
    chosen = re.search(r'<p class="why-chosen">(.*?)</p>', section, re.S)
    assert _text(chosen.group(1)) == "Chosen n0: total 0 (tied with n1: the name that sorts first wins)"
    unscored = re.search(r'<p class="small muted" id="why-nodes-unscored">(.*?)</p>', section, re.S)
    assert _text(unscored.group(1)) == ("No node-order plugin (binpack, nodeorder, usage) is enabled: every "
                                        "node scores 0, so the first node by name that fits wins.")
    assert "<li>" not in section


def test_a_tie_says_the_name_decided(users, client_as):
    # old-0 (4 cpu, 8Gi) fills n1. For old-1, n0 scores binpack (4/8 + 8/16) / 2 * 200 = 100 and
    # nodeorder 50 + 100 + 300 = 450; n2 binpack (4/4 + 8/16) / 2 * 200 = 150 and nodeorder
    # (0 + 50) // 2 = 25 + balanced trunc(75) + 300 = 400: both 550, and n0 sorts first.
    three_nodes()
    submit("old", tasks=2, cpu="4", memory="8Gi")
    cycle_run()
    section = _section(_page(client_as(users["viewer"]), "old"))
    chosen = [_text(p) for p in re.findall(r'<p class="why-chosen">(.*?)</p>', section, re.S)]
    assert chosen == [
        "Chosen n1: binpack 200, nodeorder 400: total 600",
        "Chosen n0: binpack 100, nodeorder 450: total 550 (tied with n2: the name that sorts first wins)",
    ]

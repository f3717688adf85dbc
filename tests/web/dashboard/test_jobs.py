"""Pending jobs list (filters) and the job page (reason, chain, gang, node failures, position)."""

from __future__ import annotations

import re

import pytest

from schedweb.core.models import Job

WAITING = ["prod/backfill-2024", "prod/etl-returns", "prod/in-memory-join", "nlp/tokenize-corpus",
           "nlp/elastic-hpo", "nlp/gpt-giant", "dev/sandbox-overcap", "vision/megabatch"]


def _listed(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)">', html)


@pytest.mark.parametrize(("query", "expected"), [
    ("", WAITING),
    ("?reason=QueueOverDeserved", WAITING),
    ("?reason=NodeFit", []),
    ("?queue=research", ["nlp/tokenize-corpus", "nlp/elastic-hpo", "nlp/gpt-giant", "vision/megabatch"]),
    ("?queue=nlp-train", ["nlp/gpt-giant"]),
    ("?queue=production&reason=QueueOverDeserved", ["prod/backfill-2024", "prod/etl-returns",
                                                    "prod/in-memory-join"]),
    ("?queue=nope", []),
])
def test_pending_list_filters(cycled, client_as, query, expected):
    html = client_as(cycled["viewer"]).get(f"/jobs/pending/{query}").content.decode()
    assert _listed(html) == expected


def test_pending_list_shows_reason_and_gang_progress(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/pending/?queue=nlp-eval").content.decode()
    row = html[html.index('data-job="nlp/elastic-hpo"'):]
    row = row[:row.index("</tr>")]
    assert "4 / 2" in row  # 4 of 8 tasks hold a node; the gang needs 2
    assert "Queue at its deserved share" in row
    assert "queue nlp-eval resource quota insufficient: insufficient cpu (need 2, 0 left)" in row


def test_pending_list_before_a_cycle_and_htmx_rows(demo, client_as):
    client = client_as(demo["viewer"])
    assert len(_listed(client.get("/jobs/pending/").content.decode())) == 17
    part = client.get("/jobs/pending/?queue=vision", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in part
    # Higher priority first: labeling-export's class "low-priority" (10) beats no class (0).
    assert _listed(part) == ["vision/labeling-export", "vision/detector-train", "vision/megabatch",
                             "vision/tf-dist"]


def test_job_page_explains_why_it_waits(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/nlp/elastic-hpo/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert ("Queue at its deserved share Its queue already uses its deserved share, and other queues need "
            "the rest: queue nlp-eval resource quota insufficient: insufficient cpu (need 2, 0 left)") in text
    assert "It is number 2 of 2 waiting jobs in queue nlp-eval" in text
    assert "4 ready / 2 minimum of 8 tasks" in text
    assert "4 Binding, 4 Pending" in text
    chain = html[html.index('id="queue-chain"'):html.index('id="timeline"')]
    assert re.findall(r'<a href="/queues/([^/]+)/">', chain) == ["research", "nlp", "nlp-eval"]
    assert 'class="tight"' in chain  # nlp-eval has no cpu headroom left
    timeline = html[html.index('id="timeline"'):]
    assert "Queue at its deserved share" in timeline


def test_job_page_node_failure_summary(cycled, client_as):
    Job.objects.filter(namespace="vision", name="megabatch").update(
        reason_code="NodeFit", reason_message="0/21 nodes are unavailable: 20 Insufficient cpu, 1 cordoned.",
        reason_details={"node_failures": {"Insufficient cpu": 12,
                                          "node(s) had untolerated taint {gpu: true}": 8,
                                          "node(s) were unschedulable": 1}})
    html = client_as(cycled["viewer"]).get("/jobs/vision/megabatch/").content.decode()
    assert ("12 Insufficient cpu, 8 node(s) had untolerated taint {gpu: true}, "
            "1 node(s) were unschedulable") in html
    assert "No node has room for its tasks right now: 0/21 nodes are unavailable" in html


def test_job_page_of_a_running_job(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/nlp/bert-pretrain/").content.decode()
    assert "The job is Running." in html
    assert "4 ready / 4 minimum" in html
    assert 'id="position"' not in html

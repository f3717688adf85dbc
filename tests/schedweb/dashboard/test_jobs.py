"""Pending jobs list (NeverFits first, filters) and the job page in every state.

Expectations follow the demo (schedweb.core.demo_data) under the default configuration
(hierarchical capacity) after one cycle:
- NeverFits: megabatch (a 128-cpu task; untolerated GPU / highmem taints leave it the 32-core cpu
  nodes), in-memory-join (a 2000Gi task; highmem nodes have 1536Gi), gpt-giant (20 x 8 GPUs = 160 >
  research's capability 40), sandbox-overcap (40 x 2 cpu = 80 > dev's capability 32);
- QueueOverCapability: nlp-eval full at its capability (48 cpu) for tokenize-corpus and
  elastic-hpo, etl at its 120 cpu for backfill-2024 and etl-returns, research's 40 GPUs with 36
  held for detector-train (8 GPUs a task: 4 left).
"""

from __future__ import annotations

import re

import pytest

from schedweb.core.models import Job

NEVER = ["prod/in-memory-join", "nlp/gpt-giant", "dev/sandbox-overcap", "vision/megabatch"]  # by queue name
SHARE = ["prod/backfill-2024", "prod/etl-returns", "nlp/tokenize-corpus", "nlp/elastic-hpo",
         "vision/detector-train"]


def _listed(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)"', html)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def _para(html: str, element_id: str) -> str:
    """The text of the <p id=element_id>."""
    return _text(re.search(rf'<p[^>]* id="{element_id}"[^>]*>(.*?)</p>', html, re.S).group(1))


@pytest.mark.parametrize(("query", "expected"), [
    ("", NEVER + SHARE),
    ("?reason=NeverFits", NEVER),
    ("?reason=QueueOverCapability", SHARE),
    ("?reason=NodeFit", []),
    ("?queue=research", ["nlp/gpt-giant", "vision/megabatch", "nlp/tokenize-corpus", "nlp/elastic-hpo",
                         "vision/detector-train"]),
    ("?queue=nlp-train", ["nlp/gpt-giant"]),
    ("?queue=production&reason=QueueOverCapability", ["prod/backfill-2024", "prod/etl-returns"]),
    ("?queue=nope", []),
])
def test_pending_list_filters(cycled, client_as, query, expected):
    html = client_as(cycled["viewer"]).get(f"/jobs/pending/{query}").content.decode()
    assert _listed(html) == expected


def test_pending_list_puts_never_fits_first_with_its_kind(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/pending/").content.decode()
    kinds = re.findall(r'<tr data-job="([^"]+)" class="never-fits" data-kind="([^"]+)">', html)
    assert kinds == [("prod/in-memory-join", "TaskLargerThanAnyNode"),
                     ("nlp/gpt-giant", "GangExceedsQueueLimit"),
                     ("dev/sandbox-overcap", "GangExceedsQueueLimit"),
                     ("vision/megabatch", "TaskLargerThanAnyNode")]
    # The reason filter lists NeverFits first, with its count.
    options = re.findall(r'<option value="(\w+)"[^>]*>([^<]+)</option>', html)
    assert options[-2:] == [("NeverFits", "Can never run (4)"),
                            ("QueueOverCapability", "Queue at its capability (5)")]
    row = html[html.index('data-job="vision/megabatch"'):]
    row = _text(row[:row.index("</tr>")])
    assert ("Can never run: a task is larger than any node This job can never run as submitted: one task "
            "needs 128 cores, the largest node it can use has 32 cores.") in row


def test_pending_list_shows_share_reasons_in_human_units(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/pending/?queue=nlp-eval").content.decode()
    row = html[html.index('data-job="nlp/elastic-hpo"'):]
    row = _text(row[:row.index("</tr>")])
    assert "4 / 2" in row  # 4 of 8 tasks hold a node; the gang needs 2
    assert ("Queue at its capability Queue nlp-eval has too little room under its real capability: "
            "cpu needs 2 cores, 0 cores left.") in row


def test_pending_list_before_a_cycle_and_htmx_rows(demo, client_as):
    client = client_as(demo["viewer"])
    assert len(_listed(client.get("/jobs/pending/").content.decode())) == 17
    part = client.get("/jobs/pending/?queue=vision", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in part
    # Higher priority first: labeling-export's class "low-priority" (10) beats no class (0).
    assert _listed(part) == ["vision/labeling-export", "vision/detector-train", "vision/megabatch",
                             "vision/tf-dist"]


def test_job_page_of_a_share_reason(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/nlp/elastic-hpo/").content.decode()
    text = _text(html)
    assert ("Why is it waiting? Queue at its capability Queue nlp-eval has too little room under its real "
            "capability: cpu needs 2 cores, 0 cores left.") in text
    assert ("Scheduler's message: queue nlp-eval resource quota insufficient: insufficient cpu "
            "(need 2, 0 left)") in text
    assert "It is number 2 of 2 waiting jobs in queue nlp-eval" in text
    assert "4 ready / 2 minimum of 8 tasks" in text and "4 Binding, 4 Pending" in text
    assert _para(html, "crumbs") == \
        'Pending jobs / nlp/elastic-hpo'
    chain = html[html.index('id="queue-chain"'):html.index('id="timeline"')]
    assert 'data-source="reason" data-limit="real_capability"' in chain
    assert re.findall(r'<tr data-queue="([^"]+)"', chain) == ["research", "nlp", "nlp-eval"]
    named = chain[chain.index('data-queue="nlp-eval" class="named"'):]
    # nlp-eval holds its whole capability, 48 cores: 12 eval-sweep-1 + 12 eval-sweep-2 + 8 eval-sweep-3
    # + 8 elastic-hpo (4 of 8 tasks) + 8 tokenize-corpus (8 of 10 tasks); none left, cpu marked.
    assert re.search(r'<td data-dim="cpu" class="tight">48 / 48 cores\s*'
                     r'<span class="headroom">\(0 cores left\)', named)
    assert "Queue at its capability" in html[html.index('id="timeline"'):]


def test_job_page_of_a_never_fits_job(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/nlp/gpt-giant/").content.decode()
    reason = html[html.index('id="reason"') - 60:html.index('id="gang"')]
    assert ('class="card never-fits" id="reason" data-state="waiting" '
            'data-kind="GangExceedsQueueLimit"') in reason
    assert _text(reason).count("This job can never run as submitted") == 1
    assert ("This job can never run as submitted: its 20 tasks, which must start together, need 160 GPUs, "
            "queue research can never have more than 40 GPUs (its capability).") in _text(reason)
    # NeverFits comes before every other block of the page.
    assert html.index('id="reason"') < html.index('id="gang"') < html.index('id="queue-chain"')
    chain = html[html.index('id="queue-chain"'):html.index('id="timeline"')]
    assert re.search(r'data-queue="research" class="named".*?'
                     r'<td data-dim="nvidia.com/gpu" class="tight">36 / 40 GPUs', chain, re.S)


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
    # Without a chain in its details, the chain is the same cycle's samples (capacity: real capability).
    assert 'data-source="cycle" data-limit="real_capability"' in html


def test_job_page_of_a_running_job(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/jobs/nlp/bert-pretrain/").content.decode()
    text = _text(html)
    assert 'data-state="running"' in html and "Where it runs" in text
    assert "Why is it waiting" not in text and 'id="position"' not in html
    # 4 tasks of 4 GPUs: the demo puts two on each of gpu-01 and gpu-02.
    assert re.findall(r"<tr><td><a [^>]*>([^<]+)</a></td><td class=\"num\">(\d+)</td><td>([^<]+)</td></tr>",
                      html) == [("gpu-01", "2", "2 Running"), ("gpu-02", "2", "2 Running")]
    assert "4 ready / 4 minimum" in text
    assert _para(html, "crumbs") == \
        "Jobs / Running / nlp/bert-pretrain"


@pytest.mark.parametrize(("job", "state", "ending", "crumbs"), [
    ("dev/notebook-carol", "cancelled", "Cancelled", "Jobs / Finished / dev/notebook-carol"),
    ("nlp/eval-sweep-0", "completed", "Completed", "Jobs / Finished / nlp/eval-sweep-0"),
])
def test_job_page_of_a_finished_job(cycled, client_as, job, state, ending, crumbs):
    html = client_as(cycled["viewer"]).get(f"/jobs/{job}/").content.decode()
    text = _text(html)
    assert f'data-state="{state}"' in html
    assert "How it ended" in text and _para(html, "ending").startswith(f"{ending} ")
    assert "Why is it" not in text and "Pending jobs" not in _text(html[html.index("<main"):])
    assert 'id="queue-chain"' not in html and "Gang progress" not in text
    assert _para(html, "crumbs") == crumbs


def test_job_page_names_who_cancelled(cycled, client_as):
    from schedweb.core import services

    job = Job.objects.get(namespace="vision", name="labeling-export")
    services.job_cancel(job=job, actor=cycled["lead"])
    html = client_as(cycled["viewer"]).get("/jobs/vision/labeling-export/").content.decode()
    ending = _para(html, "ending")
    assert ending.startswith("Cancelled by lead ")
    assert ending.endswith("It is not waiting and will not be scheduled again.")

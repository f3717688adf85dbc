"""The job page of every reason code (and every NeverFits kind) in headless chromium, with a
screenshot each under var/screenshots/job-reason-<code>.png.

Reasons the demo produces are the scheduler's own (NeverFits of two kinds, QueueOverCapability,
QueueClosed after closing a queue, QueueOverDeserved under flat proportion); the others are
written as the cycle writes them (code, Volcano-style message, details) on a waiting demo job.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GPU = "nvidia.com/gpu"

# code -> (message, details, the sentence the page must show after the label)
WRITTEN = {
    "InvalidJob": ("job has 1 task, fewer than its minAvailable 3", {},
                   "The job is invalid and will never be scheduled as it is: job has 1 task, fewer than "
                   "its minAvailable 3"),
    "NotEnqueued": ("job vision/tf-dist is not enqueued yet", {},
                    "The job has not been admitted: starting it would exceed a quota or the cluster's room: "
                    "job vision/tf-dist is not enqueued yet"),
    "GangUnschedulable": (
        "2/5 tasks in gang unschedulable: pod group is not ready, 1 Bound, 4 Pending, 3 minAvailable; 0/21 "
        "nodes are unavailable: 11 Insufficient cpu, 10 node(s) had untolerated taint.",
        {"node_failures": {"Insufficient cpu": 11, "node(s) had untolerated taint": 10}},
        "Not enough of its tasks can start together to reach the gang's minimum: 2/5 tasks in gang "
        "unschedulable"),
    "NodeFit": ("0/21 nodes are unavailable: 11 Insufficient cpu, 10 node(s) had untolerated taint.",
                {"node_failures": {"Insufficient cpu": 11, "node(s) had untolerated taint": 10}},
                "No node has room for its tasks right now: 0/21 nodes are unavailable: 11 Insufficient cpu"),
    "WaitingForPreemption": ("2 task(s) pipelined, waiting for resources being released", {},
                             "Room is being freed by evicting other tasks; it starts once they are gone: 2 "
                             "task(s) pipelined"),
    "Unknown": ("5 task(s) not scheduled; no action recorded why", {},
                "The scheduler did not record a specific reason: 5 task(s) not scheduled"),
}


def _write_reason(job_name: str, code: str, message: str, details: dict) -> None:
    from django.utils import timezone

    from schedweb.core.models import Job
    from schedweb.scheduling.models import JobReasonHistory

    job = Job.objects.get(name=job_name)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(reason_code=code, reason_message=message, reason_details=details,
                                         reason_since=now)
    JobReasonHistory.objects.filter(job=job).update(current=False)
    JobReasonHistory.objects.create(job=job, code=code, message=message, details=details, first_seen=now,
                                    last_seen=now, current=True)


def _open(page, live_server, job: str) -> None:
    page.goto(f"{live_server.url}/jobs/{job}/")
    assert page.get_attribute("#reason", "data-state") == "waiting"


def test_job_page_of_each_reason_code(signed_in, live_server):
    from schedweb.core import services
    from schedweb.core.models import Queue
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.default_conf import NAMED_CONFS

    page = signed_in("viewer")
    # The scheduler's own: NeverFits of each kind the demo has, and QueueOverCapability.
    never = {
        "nlp/gpt-giant": ("GangExceedsQueueLimit",
                          "need 160 GPUs, queue research can never have more than 40 GPUs (its capability)."),
        "vision/megabatch": ("TaskLargerThanAnyNode",
                             "one task needs 128 cores, the largest node it can use has 32 cores."),
    }
    for job, (kind, sentence) in never.items():
        _open(page, live_server, job)
        assert page.get_attribute("#reason", "data-kind") == kind
        assert page.inner_text("#reason h2") == "It can never run as submitted"
        assert page.inner_text("#never-fits strong").endswith(sentence)
        screenshot(page, f"job-reason-NeverFits-{kind}")
    _open(page, live_server, "vision/detector-train")
    assert page.inner_text("#reason .reason") == "Queue at its capability"
    assert page.inner_text("#reason .reason-sentence").endswith(
        "Queue research has too little room under its real capability: GPU needs 8 GPUs, 4 GPUs left.")
    assert page.inner_text("#queue-chain tr.named td:first-child").startswith("research")
    assert page.locator("#insufficient tr").count() == 2
    screenshot(page, "job-reason-QueueOverCapability")
    # QueueClosed: close vision (busy: Closing) and let a cycle see it.
    services.queue_set_state(queue=Queue.objects.get(name="vision"), state="Closed")
    assert not cycle_run().errors
    _open(page, live_server, "vision/detector-train")
    assert page.inner_text("#reason .reason") == "Queue closed"
    assert ("Its queue is closed, so it will not be scheduled until the queue is opened again: queue "
            "vision is closing") in page.inner_text("#reason .reason-sentence")
    screenshot(page, "job-reason-QueueClosed")
    services.queue_set_state(queue=Queue.objects.get(name="vision"), state="Open")
    # Written as a cycle writes them.
    from schedweb.core.models import Job, Task

    for code, (message, details, sentence) in WRITTEN.items():
        name = "tf-dist" if code == "NotEnqueued" else "labeling-export"
        job = f"vision/{name}"
        _write_reason(name, code, message, details)
        # Waiting again (a cycle placed it): not admitted for NotEnqueued, admitted otherwise.
        Job.objects.filter(name=name).update(phase="Pending" if code == "NotEnqueued" else "Inqueue")
        Task.objects.filter(job__name=name).update(status="Pending", node=None)
        _open(page, live_server, job)
        assert sentence in page.inner_text("#reason .reason-sentence"), code
        if details.get("node_failures"):
            failures = page.inner_text("#node-failures p")
            assert failures == "11 Insufficient cpu, 10 node(s) had untolerated taint"
        assert page.locator("#queue-chain tr").count() >= 2  # the same cycle's chain, root excluded
        screenshot(page, f"job-reason-{code}")
    # QueueOverDeserved: Volcano's flat proportion refuses against deserved.
    services.scheduler_config_activate(yaml=NAMED_CONFS["volcano-default"][0])
    assert not cycle_run().errors
    job = (Job.objects.filter(reason_code="QueueOverDeserved", phase__in=("Pending", "Inqueue"))
           .order_by("namespace", "name").first())
    assert job is not None
    _open(page, live_server, f"{job.namespace}/{job.name}")
    assert page.inner_text("#reason .reason") == "Queue at its deserved share"
    assert "has too little room under its deserved share" in page.inner_text("#reason .reason-sentence")
    assert page.get_attribute("#queue-chain", "data-limit") == "deserved"
    screenshot(page, "job-reason-QueueOverDeserved")


def test_job_page_of_each_state(signed_in, live_server):
    page = signed_in("viewer")
    for job, state, title in (("nlp/bert-pretrain", "running", "Where it runs"),
                              ("nlp/eval-sweep-0", "completed", "How it ended"),
                              ("dev/notebook-carol", "cancelled", "How it ended")):
        page.goto(f"{live_server.url}/jobs/{job}/")
        assert page.get_attribute("#reason", "data-state") == state
        assert page.inner_text("#reason h2") == title
        crumbs = page.inner_text("#crumbs")
        assert crumbs.startswith("Jobs / ") and "Pending" not in crumbs
        screenshot(page, f"job-state-{state}")

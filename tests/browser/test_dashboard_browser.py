"""The dashboard driven by headless chromium: tree, charts, why pending, editing a queue."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GPU = "nvidia.com/gpu"


def test_overview_nodes_and_my_queues_render(signed_in, live_server):
    page = signed_in("lead")
    # Demo after one cycle (hierarchical capacity): research 159 + production 156 + dev 8.5 cores held.
    assert page.inner_text("[data-dim=cpu] .muted") == "323.5 cores of 1,024 cores allocated"
    assert page.inner_text("#cycle-health h2") == "Scheduling cycle"
    screenshot(page, "overview")
    page.goto(f"{live_server.url}/nodes/")
    page.wait_for_function("() => document.getElementById('node-heatmap').data !== undefined")
    heat = page.evaluate("document.getElementById('node-heatmap').data[0]")
    assert heat["y"] == ["CPU", "Memory", "GPU"]
    assert len(heat["x"]) == 21 and heat["x"][0] == "cpu-01"
    screenshot(page, "nodes")
    page.goto(f"{live_server.url}/mine/")
    names = page.eval_on_selector_all("#my-queues td:first-child a", "els => els.map(e => e.textContent)")
    assert names == ["research", "nlp", "nlp-eval", "nlp-train", "vision"]
    screenshot(page, "my-queues")


def test_tree_expands_and_filters(signed_in, live_server):
    page = signed_in("viewer")
    page.goto(f"{live_server.url}/queues/")
    assert page.is_visible("#q-nlp > summary")  # top-level queues start open
    assert not page.is_visible("#q-nlp-train > summary")
    page.click("#q-nlp > summary .qmeta")  # the row (not its link) toggles the <details>
    assert page.is_visible("#q-nlp-train > summary")
    screenshot(page, "queue-tree")
    page.fill("#tree-search", "train")
    visible = page.eval_on_selector_all(
        "details.q", "els => els.filter(e => e.offsetParent !== null).map(e => e.id)")
    assert visible == ["q-research", "q-nlp", "q-nlp-train"]
    page.fill("#tree-search", "zzz")
    assert page.is_visible("#tree-empty")
    screenshot(page, "queue-tree-search")


def _chart(page, div_id: str) -> dict:
    page.wait_for_function(f"() => document.getElementById('{div_id}').data !== undefined")
    return page.evaluate(f"document.getElementById('{div_id}').data[0]")


def test_queue_chart_reads_current_figures(signed_in, live_server):
    page = signed_in("viewer")
    page.goto(f"{live_server.url}/queues/vision/")
    cpu = _chart(page, "chart-cpu-current")
    # vision: 47 cores held (16 resnet + 12 augment + 1 labeling + 18 tf-dist; detector-train waits for
    # research's GPUs), 528 more asked (megabatch 512, detector 16); deserved its configured 64; the
    # frame is its real capability, its own capability of 96.
    assert cpu["x"] == ["Allocated", "Pending", "Deserved", "Guarantee", "Real capability"]
    assert cpu["y"] == [47, 528, 64, None, 96]
    history = page.evaluate("document.getElementById('chart-cpu-history').data.map(t => [t.name, t.y])")
    assert history == [["Deserved", [64]], ["Allocated", [47]], ["Requested", [575]]]
    assert not page.is_visible("#queue-edit-form")  # a viewer gets no write controls
    assert page.locator("#close-queue").count() == 0
    screenshot(page, "queue-vision")


def test_pending_job_reason(signed_in, live_server):
    from schedweb.core.models import Job

    page = signed_in("viewer")
    page.goto(f"{live_server.url}/jobs/pending/")
    screenshot(page, "pending")
    page.click("a:text-is('nlp/gpt-giant')")
    page.wait_for_url(f"{live_server.url}/jobs/nlp/gpt-giant/")
    job = Job.objects.get(namespace="nlp", name="gpt-giant")
    assert job.reason_code == "NeverFits"
    assert page.inner_text("#reason h2") == "It can never run as submitted"
    assert page.inner_text("#never-fits strong") == (
        "This job can never run as submitted: its 20 tasks, which must start together, need 160 GPUs, queue "
        "research can never have more than 40 GPUs (its capability).")
    assert page.inner_text("#gang strong") == "0 ready / 20 minimum"
    screenshot(page, "job-gpt-giant")


def test_deserved_edit_changes_next_cycle_and_weight_is_marked_ignored(signed_in, live_server):
    """Under hierarchical capacity (the default) a queue's share is its deserved: weight does
    nothing, and the page says so next to the field. Editing deserved moves the next cycle."""
    from schedweb.core.models import Queue
    from schedweb.scheduling.cycle import cycle_run

    page = signed_in("lead")
    page.goto(f"{live_server.url}/queues/vision/")
    gpu_cell = "#queue-figures td[data-dim='nvidia.com/gpu']"
    assert page.inner_text(gpu_cell) == "16 GPUs"  # its configured deserved
    hint = page.inner_text("#queue-edit-form [data-ignored=weight]")
    assert hint == ("Ignored: The active configuration uses the capacity plugin, which shares by deserved: "
                    "weight has no effect.")
    assert page.locator("#queue-settings tr.ignored[data-field=weight]").count() == 1
    # The box shows quantities as written, not stored units.
    assert page.input_value("#id_deserved") == '{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "16"}'
    page.fill("#id_deserved", '{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}')
    page.click("#queue-edit-form button[type=submit]")
    page.wait_for_selector(".messages li")
    assert Queue.objects.get(name="vision").deserved[GPU] == 8000
    assert not cycle_run().errors
    page.reload()
    assert page.inner_text(gpu_cell) == "8 GPUs"
    gpu = _chart(page, "chart-nvidia-com-gpu-current")
    assert gpu["y"][2] == 8
    screenshot(page, "queue-vision-admin")
    # The edit is in the audit log the lead can read: who, what, before -> after, in GPUs.
    page.click("nav a:has-text('Audit log')")
    page.wait_for_url(f"{live_server.url}/audit/")
    first = page.locator("#audit tr").nth(1)
    assert "lead" in first.inner_text() and "Queue vision" in first.inner_text()
    assert first.locator("table.diff tr").inner_text().split() == ["deserved:", "GPU", "16", "GPUs", "→", "8",
                                                                   "GPUs"]
    screenshot(page, "audit-log-lead")

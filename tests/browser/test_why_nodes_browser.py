"""The job page's "Why these nodes" in headless chromium, under the Content-Security-Policy: the
bars get their widths from data-w (static/dashboard/bars.js), no violation is reported, and the
section is saved as var/screenshots/job-why-nodes.png (the whole page as job-why-nodes-page.png).

The demo's first cycle runs schedweb's default configuration (nodeorder and binpack score the
nodes), so its placed jobs have recorded scores.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import SCREENSHOTS, screenshot
from tests.browser.test_csp_browser import _recording

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _recorded_job() -> tuple[str, int]:
    """namespace/name of a demo job with recorded scores, and its ranked nodes: the first (by
    name) of those with the most ranked nodes, preferring a choice binpack had a say in (a
    best-effort task requests nothing: binpack scores it 0 everywhere)."""
    from schedweb.scheduling.models import TaskPlacementScores

    rows = (TaskPlacementScores.objects.select_related("job")
            .order_by("job__namespace", "job__name", "task_name"))
    def binpacked(r: TaskPlacementScores) -> bool:
        return bool((r.chosen_scores or {}).get("plugins", {}).get("binpack"))

    best = max(rows, key=lambda r: (len(r.top), binpacked(r)))
    return f"{best.job.namespace}/{best.job.name}", len(best.top)


def test_why_these_nodes_section(signed_in, live_server):
    page = signed_in("viewer")
    console = _recording(page)
    job, ranked = _recorded_job()
    assert ranked >= 2  # a chosen node and at least one runner-up to compare
    page.goto(f"{live_server.url}/jobs/{job}/")
    section = page.locator("#why-nodes")
    section.wait_for()
    assert section.locator("h2").inner_text() == "Why these nodes"
    first = section.locator(".why-task").first
    chosen = first.get_attribute("data-node")
    assert first.locator(".why-chosen").inner_text().startswith(f"Chosen {chosen}: ")
    bars = first.locator("table.why-scores .bar .alloc")
    page.wait_for_function("() => document.querySelector('#why-nodes .bar .alloc').offsetWidth > 0")
    widths = [bars.nth(i).evaluate("e => e.getBoundingClientRect().width / e.parentElement.clientWidth")
              for i in range(bars.count())]
    wanted = [float(bars.nth(i).get_attribute("data-w")) / 100 for i in range(bars.count())]
    assert widths == pytest.approx(wanted, abs=0.02)  # data-w became the CSS width
    assert section.locator(".why-hints li").count() >= 1
    assert page.evaluate("window.__csp") + console == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(SCREENSHOTS / "job-why-nodes.png"))
    screenshot(page, "job-why-nodes-page")

"""The Content-Security-Policy in a real browser: every dashboard page and the Swagger UI render
(charts drawn, htmx fragments swapped in, the API operations listed) without one CSP violation,
whether reported as a `securitypolicyviolation` event or on the console."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Recorded in the page before any of its scripts run (Playwright init scripts are exempt from CSP).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
  [e.violatedDirective, e.blockedURI, (e.sample || "").slice(0, 80), e.sourceFile, e.lineNumber].join(" ")));
"""
CSP_CONSOLE = re.compile(r"Content.Security.Policy|strict CSP|unsafe-eval|unsafe-inline", re.IGNORECASE)

# (path, what shows the page finished its scripts)
PAGES = [
    ("/", "document.querySelector('[data-dim=cpu] .bar .alloc').offsetWidth > 0"),
    ("/queues/", "document.querySelector('#q-research .bar .alloc') !== null"),
    ("/queues/vision/", "document.getElementById('chart-cpu-history').querySelector('.main-svg') !== null"),
    ("/jobs/pending/", "document.getElementById('pending-rows') !== null"),
    ("/jobs/", "document.getElementById('job-table') !== null"),
    ("/jobs/mine/", "document.getElementById('state-tabs') !== null"),
    ("/tokens/", "document.getElementById('token-create-form') !== null"),
    ("/jobs/nlp/gpt-giant/", "document.querySelector('#gang .bar') !== null"),
    # A waiting job: its estimated start and the legend of estimate bases (issue 20); the queue
    # edit form's Preview, swapped in by htmx, is tests/browser/test_forecast_browser.py's.
    ("/jobs/vision/detector-train/", "document.querySelector('#forecast #forecast-legend') !== null"),
    ("/nodes/", "document.getElementById('node-heatmap').querySelector('.main-svg') !== null"),
    ("/mine/", "document.getElementById('my-queues') !== null"),
    ("/audit/", "document.getElementById('audit') !== null"),
    ("/api/docs/", "document.querySelectorAll('.swagger-ui .opblock').length > 10"),
]


def _visit(page, url: str, ready: str, console: list[str]) -> list[str]:
    console.clear()
    response = page.goto(url)
    assert response.status == 200, url
    assert response.headers["content-security-policy"].startswith("default-src 'self'; script-src 'self'")
    page.wait_for_function(ready if ready.startswith("() =>") else f"() => {ready}")
    page.wait_for_load_state("networkidle")
    return page.evaluate("window.__csp") + list(console)


def _recording(page) -> list[str]:
    console: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}")
            if CSP_CONSOLE.search(msg.text) else None)
    return console


def test_every_page_renders_without_csp_violations(signed_in, live_server):
    page = signed_in("staff")
    console = _recording(page)
    problems = {path: _visit(page, live_server.url + path, ready, console) for path, ready in PAGES}
    assert problems == {path: [] for path, _ in PAGES}
    # Swagger UI: an operation opened and tried out renders its forms and examples (operations
    # are grouped by resource: schedweb.api.schema_tags).
    page.click("#operations-queues-v1_queues_list .opblock-summary")
    page.click("#operations-queues-v1_queues_list .try-out__btn")
    page.wait_for_selector("#operations-queues-v1_queues_list .execute")
    # Submitting a job shows its summary and the request example.
    page.click("#operations-jobs-v1_jobs_create .opblock-summary")
    assert page.inner_text("#operations-jobs-v1_jobs_create .opblock-summary-description") == (
        "Submit a job with all its tasks")
    page.wait_for_selector("#operations-jobs-v1_jobs_create .body-param__example, "
                           "#operations-jobs-v1_jobs_create .microlight")
    assert "tf-mnist-worker-1" in page.inner_text("#operations-jobs-v1_jobs_create")
    assert page.evaluate("window.__csp") + console == []
    screenshot(page, "api-docs-csp")


ADMIN_PAGES = ["/admin/", "/admin/core/queue/", "/admin/core/queue/add/", "/admin/core/node/",
               "/admin/auth/user/add/"]


def test_admin_pages_render_without_csp_violations(browser, live_server, demo):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("root", password="pw-browser")
    context = browser.new_context()
    page = context.new_page()
    console = _recording(page)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("input[name=username]", "root")
    page.fill("input[name=password]", "pw-browser")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    loaded = "() => document.readyState === 'complete'"
    problems = {path: _visit(page, live_server.url + path, loaded, console) for path in ADMIN_PAGES}
    assert problems == {path: [] for path in ADMIN_PAGES}
    context.close()


def test_numbers_reach_the_stylesheet_through_data_attributes(signed_in, live_server):
    page = signed_in("staff")
    _recording(page)
    # Overview: the cpu bar's data-w (the percent the card shows) becomes --w, then its width.
    page.wait_for_function(f"() => {PAGES[0][1]}")
    shown, data_w, css_w, width = page.evaluate("""(() => {
      const card = document.querySelector('[data-dim=cpu]'), span = card.querySelector('.bar .alloc');
      return [card.querySelector('.big').textContent, span.dataset.w,
              getComputedStyle(span).getPropertyValue('--w'),
              100 * span.getBoundingClientRect().width / span.parentElement.clientWidth];
    })()""")
    assert float(shown.rstrip("%")) == float(data_w) and css_w == data_w and 0 < float(data_w) < 100
    assert round(width) == round(float(data_w))
    # An htmx refresh of the overview swaps in new bars: they get their widths too.
    swapped = page.evaluate("""new Promise((resolve) => {
      document.body.addEventListener("htmx:afterSettle", () => resolve(
        document.querySelector("[data-dim=cpu] .bar .alloc").getBoundingClientRect().width > 0),
        {once: true});
      document.querySelector("[data-dim=cpu] .bar .alloc").remove();
      htmx.ajax("GET", "/", {target: "#overview-body", swap: "innerHTML"});
    })""")
    assert swapped is True
    page.goto(f"{live_server.url}/queues/")
    depths = page.eval_on_selector_all(
        "#q-nlp > summary, #q-nlp-train > summary",
        "els => els.map(e => getComputedStyle(e).getPropertyValue('--depth'))")
    assert depths == ["1", "2"]
    dims = page.evaluate("getComputedStyle(document.getElementById('queue-tree')).getPropertyValue('--dims')")
    assert dims == page.evaluate("String(document.querySelectorAll('.tree-head span').length - 2)") == "3"
    assert page.evaluate("window.__csp") == []


def test_the_policy_blocks_inline_script_and_style(signed_in, live_server):
    page = signed_in("viewer")
    _recording(page)
    page.goto(f"{live_server.url}/mine/")
    page.evaluate("""document.body.insertAdjacentHTML('beforeend',
        '<img src="/static/none.png" onerror="window.__ran = 1"><p id=styled style="color: red">x</p>')""")
    page.wait_for_function("() => window.__csp.length >= 2")
    assert page.evaluate("window.__ran") is None
    assert page.evaluate("getComputedStyle(document.getElementById('styled')).color") != "rgb(255, 0, 0)"
    directives = sorted(v.split()[0] for v in page.evaluate("window.__csp"))
    assert directives == ["script-src-attr", "style-src-attr"]


def test_sign_in_page_has_no_violations(browser, live_server, demo):
    context = browser.new_context()
    page = context.new_page()
    console = _recording(page)
    assert _visit(page, f"{live_server.url}/accounts/login/", "document.forms.length > 0", console) == []
    context.close()

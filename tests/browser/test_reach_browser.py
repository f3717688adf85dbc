"""In the browser: times in the reader's zone, charts that say they are loading, regions that
refresh themselves (and pause while a form is in use), and the reason on the first screen of a
phone and a tablet. Screenshots: var/screenshots/reach-*.png."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import PASSWORD, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _page(browser, live_server, username: str = "lead", **context_args):
    context = browser.new_context(**{"viewport": {"width": 1440, "height": 900}, **context_args})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return context, page


def test_times_read_in_the_browsers_zone_with_the_zone_named(browser, live_server, demo):
    context, page = _page(browser, live_server, username="staff", timezone_id="Asia/Kolkata")  # UTC+05:30
    page.goto(f"{live_server.url}/audit/")
    page.wait_for_function("() => document.querySelector('#audit time.local[data-localised]') !== null")
    shown = page.eval_on_selector_all("#audit time.local", """els => els.map(e => ({
        iso: e.getAttribute('datetime'), text: e.textContent, title: e.title}))""")
    assert shown, "the audit log lists the demo's changes"
    for t in shown[:5]:
        # "2026-12-01 19:40:02 GMT+5:30": Kolkata's wall time, the zone named; the tooltip the zone's id.
        stamp = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+)$", t["text"])
        assert stamp and stamp.group(2) in ("GMT+5:30", "IST"), t
        assert t["title"] in ("Asia/Kolkata", "Asia/Calcutta")  # the zone id (ICU may give the old name)
        # Shown to the second.
        utc = page.evaluate("iso => Math.floor(new Date(iso).getTime() / 1000) * 1000", t["iso"])
        local = page.evaluate("s => Date.UTC(+s.slice(0,4), +s.slice(5,7) - 1, +s.slice(8,10),"
                              " +s.slice(11,13), +s.slice(14,16), +s.slice(17,19))", stamp.group(1))
        assert local - utc == 5.5 * 3600 * 1000
    screenshot(page, "reach-times-kolkata")
    # A relative time keeps its words and gets the local absolute time as its tooltip.
    page.goto(f"{live_server.url}/jobs/nlp/gpt-giant/")
    page.wait_for_function("() => document.querySelector('#job-body time.rel[data-localised]') !== null")
    rel = page.eval_on_selector("#job-body time.local.rel", "e => [e.textContent, e.title]")
    assert rel[0].endswith("ago") and re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (GMT\+5:30|IST)$", rel[1])
    context.close()


def test_a_chart_says_it_is_loading_until_plotly_draws(browser, live_server, demo):
    context, page = _page(browser, live_server)
    held = []
    page.route("**/vendor/plotly.min.js", lambda route: held.append(route))  # never answered
    # The held script keeps the page from finishing loading: wait for the parsed chart box only.
    page.goto(f"{live_server.url}/queues/vision/", wait_until="commit")
    page.wait_for_selector("#chart-cpu-history", state="attached")
    page.wait_for_function("""() => getComputedStyle(document.getElementById('chart-cpu-history'),
                                                        '::before').content !== 'none'""")
    notice = page.evaluate("""() => getComputedStyle(document.getElementById('chart-cpu-history'),
                                                       '::before').content""")
    assert notice == '"Loading chart\u2026"'
    for route in held:
        route.continue_()
    page.unroute("**/vendor/plotly.min.js")
    page.wait_for_function("() => document.getElementById('chart-cpu-history').querySelector('.main-svg')",
                           timeout=60000)  # a 4.7 MB bundle on a busy machine
    after = page.evaluate("""() => getComputedStyle(document.getElementById('chart-cpu-history'),
                                                      '::before').content""")
    assert after in ("none", "normal")
    context.close()


def test_the_job_list_refreshes_itself_and_pauses_while_the_filters_are_edited(browser, live_server, demo):
    from schedweb.core import services
    from schedweb.core.models import Job

    context, page = _page(browser, live_server, username="staff")
    page.goto(f"{live_server.url}/jobs/?namespace=nlp&ordering=name")
    refresh = "() => document.getElementById('job-list-live').dispatchEvent(new Event('refresh'))"
    row = '#job-table tr[data-job="nlp/gpt-giant"]'
    assert page.get_attribute(row, "data-phase") != "Cancelled"
    services.job_cancel(job=Job.objects.get(namespace="nlp", name="gpt-giant"))
    # While the reader types in a filter field, no refresh replaces what they are looking at.
    page.focus("#job-filter input[name=search]")
    page.evaluate(refresh)
    page.wait_for_function("() => document.getElementById('job-list-live').dataset.refreshPaused === '1'")
    assert page.get_attribute(row, "data-phase") != "Cancelled"
    page.evaluate("() => document.activeElement.blur()")
    page.evaluate(refresh)
    page.wait_for_function("() => document.getElementById('job-list-live').dataset.refreshed === '1'")
    assert page.get_attribute(row, "data-phase") == "Cancelled"
    context.close()


def test_the_queue_tree_keeps_open_branches_across_a_refresh(browser, live_server, demo):
    context, page = _page(browser, live_server)
    page.goto(f"{live_server.url}/queues/")
    page.evaluate("() => { document.querySelector('#queue-tree details[data-name=nlp]').open = true; }")
    was = page.evaluate("() => Array.from(document.querySelectorAll('#queue-tree details')).map(d => d.open)")
    page.evaluate("() => document.getElementById('tree-live').dispatchEvent(new Event('refresh'))")
    page.wait_for_function("() => document.getElementById('tree-live').dataset.refreshed === '1'")
    now = page.evaluate("() => Array.from(document.querySelectorAll('#queue-tree details')).map(d => d.open)")
    assert now == was and page.evaluate(
        "() => document.querySelector('#queue-tree details[data-name=nlp]').open") is True
    # Bars of the fresh tree get their widths (bars.js runs on the swapped fragment at htmx's
    # load event, which follows the swap's settle: waited for, not read at once).
    page.wait_for_function("() => getComputedStyle(document.querySelector('#q-research .bar .alloc'))"
                           ".getPropertyValue('--w') !== ''", timeout=10_000)
    context.close()


@pytest.mark.parametrize(("width", "height"), [(800, 900), (390, 844)])
@pytest.mark.parametrize("path", ["/jobs/pending/", "/jobs/?state=waiting"])
def test_the_reason_is_on_the_first_screen(browser, live_server, demo, width, height, path):
    context, page = _page(browser, live_server, viewport={"width": width, "height": height})
    page.goto(live_server.url + path)
    table = "#pending-table" if "pending" in path else "#job-table"
    box = page.evaluate(f"""() => {{
        const r = document.querySelector('{table} tbody tr .reason').getBoundingClientRect();
        return {{top: r.top, bottom: r.bottom, left: r.left, right: r.right,
                 w: window.innerWidth, h: window.innerHeight}};
    }}""")
    assert box["left"] >= 0 and box["right"] <= box["w"], box
    assert box["top"] >= 0 and box["bottom"] <= box["h"], box
    screenshot(page, f"reach-first-screen-{width}-{path.strip('/').replace('/', '-').replace('?', '-')}")
    context.close()


def test_node_pages_link_tasks_to_their_jobs(browser, live_server, demo):
    context, page = _page(browser, live_server)
    page.goto(f"{live_server.url}/jobs/nlp/bert-pretrain/")
    link = page.locator("#task-table a[href^='/nodes/']").first
    node = link.inner_text()
    link.click()
    page.wait_for_url(f"{live_server.url}/nodes/{node}/")
    assert page.inner_text("h1").startswith(f"Node {node}")
    page.click("#node-task-table a[href='/jobs/nlp/bert-pretrain/']")
    page.wait_for_url(f"{live_server.url}/jobs/nlp/bert-pretrain/")
    screenshot(page, "reach-node-page")
    context.close()

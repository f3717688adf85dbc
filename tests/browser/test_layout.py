"""Every page at 1440, 800 and 390 px (a laptop, a narrow window, a phone): nothing makes the page
scroll sideways (wide tables scroll inside their card), the navigation folds behind a menu button
below the wide layout, coloured bars come with a legend. Screenshots: var/screenshots/layout-*.png."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import PASSWORD, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = [(1440, 900), (800, 900), (390, 844)]
# (path, what shows the page finished its scripts)
PAGES = [
    ("/", "document.querySelector('[data-dim=cpu] .bar .alloc') !== null"),
    ("/queues/", "document.querySelector('#q-research .bar .alloc') !== null"),
    ("/queues/vision/", "document.getElementById('chart-cpu-history').querySelector('.main-svg') !== null"),
    ("/jobs/", "document.getElementById('job-table') !== null"),
    ("/jobs/?state=waiting&ordering=name", "document.getElementById('job-table') !== null"),
    ("/jobs/mine/", "document.getElementById('job-table') !== null"),
    ("/jobs/pending/", "document.getElementById('pending-rows') !== null"),
    ("/jobs/nlp/gpt-giant/", "document.querySelector('#gang .bar') !== null"),
    ("/nodes/", "document.getElementById('node-heatmap').querySelector('.main-svg') !== null"),
    ("/nodes/gpu-01/", "document.getElementById('node-tasks') !== null"),
    ("/jobs/nlp/bert-pretrain/", "document.getElementById('task-table') !== null"),
    ("/mine/", "document.getElementById('my-queues') !== null"),
    ("/audit/", "document.getElementById('audit') !== null"),
    ("/tokens/", "document.getElementById('token-create-form') !== null"),
    ("/api/docs/", "document.querySelectorAll('.swagger-ui .opblock').length > 10"),
]
# The right edges of the widest elements, to say what overflows when something does.
OVERFLOW = """() => {
  const width = window.innerWidth;
  const wide = Array.from(document.querySelectorAll('body *'))
    .filter((el) => el.getBoundingClientRect().right > width + 0.5)
    .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
         (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') +
         ' ' + Math.round(el.getBoundingClientRect().right));
  return {scroll: document.documentElement.scrollWidth, inner: width, wide: wide.slice(0, 8)};
}"""


def _slug(path: str) -> str:
    return re.sub(r"[/?&=]+", "-", path.strip("/")) or "overview"


@pytest.fixture
def my_job(demo):
    """A job the lead submitted (so that "My jobs" lists one)."""
    from schedweb.core import services

    services.job_submit(namespace="nlp", name="lead-eval", queue="nlp-eval", submitted_by=demo["lead"],
                        tasks=[{"name": "lead-eval-0", "request": {"cpu": "1", "memory": "1Gi"}}])
    return demo


def _check(page, url: str, ready: str) -> dict:
    response = page.goto(url)
    assert response.status == 200, url
    page.wait_for_function(f"() => {ready}")
    page.wait_for_load_state("networkidle")
    return page.evaluate(OVERFLOW)


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=[str(w) for w, _ in WIDTHS])
def test_no_page_scrolls_sideways(browser, live_server, my_job, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/login/")
    found = {"/accounts/login/": page.evaluate(OVERFLOW)}
    screenshot(page, f"layout-{width}-login")
    page.fill("input[name=username]", "lead")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    for path, ready in PAGES:
        found[path] = _check(page, live_server.url + path, ready)
        screenshot(page, f"layout-{width}-{_slug(path)}")
    overflowing = {path: f for path, f in found.items() if f["scroll"] > f["inner"]}
    assert overflowing == {}
    assert all(f["inner"] == width for f in found.values())
    context.close()


@pytest.mark.parametrize(("width", "folded"), [(1440, False), (800, True), (390, True)])
def test_navigation_folds_behind_a_menu_button(signed_in, live_server, width, folded):
    page = signed_in("lead")
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_server.url}/jobs/")
    assert page.is_visible("#menu-toggle") is folded
    assert page.is_visible("nav a:text-is('My jobs')") is not folded
    if not folded:
        assert page.evaluate("document.getElementById('topbar').getBoundingClientRect().height") == 48
        return
    assert page.get_attribute("#menu-toggle", "aria-expanded") == "false"
    page.click("#menu-toggle")
    assert page.get_attribute("#menu-toggle", "aria-expanded") == "true"
    assert page.is_visible("nav a:text-is('My jobs')")
    assert page.is_visible("#site-nav a:text-is('API tokens')")
    screenshot(page, f"nav-open-{width}")
    page.keyboard.press("Escape")
    assert not page.is_visible("nav a:text-is('My jobs')")
    page.click("#menu-toggle")
    page.click("nav a:text-is('My jobs')")
    page.wait_for_url(f"{live_server.url}/jobs/mine/")
    assert page.inner_text("h1") == "My jobs"


def test_coloured_bars_have_legends(signed_in, live_server):
    page = signed_in("lead")
    for path, legend in (("/queues/", ".legend .sw.alloc"), ("/queues/vision/", ".legend .sw.deserved"),
                         ("/mine/", "#my-queues + .legend .sw.guarantee"),
                         ("/nodes/", "#nodes-legend .sw.alloc")):
        page.goto(live_server.url + path)
        assert page.locator(legend).count() == 1, path
    # The legend's swatches are the bars' colours.
    page.goto(f"{live_server.url}/mine/")
    colours = page.evaluate("""() => [document.querySelector('.legend .sw.alloc'),
                                       document.querySelector('#my-queues .bar .alloc')]
                                      .map((el) => getComputedStyle(el).backgroundColor)""")
    assert colours[0] == colours[1] == "rgb(47, 111, 223)"


def test_the_favicon_loads(signed_in, live_server):
    page = signed_in("viewer")
    href = page.get_attribute("link[rel=icon]", "href")
    assert href == "/static/favicon.svg"
    response = page.request.get(live_server.url + href)
    assert response.status == 200 and response.headers["content-type"].startswith("image/svg+xml")
    assert page.evaluate("document.querySelector('.brand img').naturalWidth") > 0

"""Every page at 1440, 800 and 390 px (a laptop, a narrow window, a phone): nothing makes the page
scroll sideways (wide tables scroll inside their card), what the page is for is on its first
screen, the navigation folds behind a menu button below the wide layout, coloured bars come with
a legend. Screenshots: var/screenshots/layout-*.png."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import PASSWORD, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = [(1440, 900), (800, 900), (390, 844)]
# (path, what shows the page finished its scripts, its first screen: what the page is for, each
# to be seen whole without scrolling either way). `{gpt_giant}`: that job's id (the API's and
# schedctl's address of it, redirected to its page).
PAGES = [
    ("/", "document.querySelector('[data-dim=cpu] .bar .alloc') !== null",
     ["[data-dim=cpu] .big", "[data-dim=cpu] .bar", "#cycle-health .big"]),
    ("/queues/", "document.querySelector('#q-research .bar .alloc') !== null",
     ["#queue-tree details > summary"]),
    ("/queues/vision/", "document.getElementById('chart-cpu-history').querySelector('.main-svg') !== null",
     ["h1 #queue-state", "#queue-figures tr:nth-child(2)", "#queue-figures tr:nth-child(3)"]),
    ("/jobs/", "document.getElementById('job-table') !== null",
     ["#job-table tbody tr .card-title a", "#job-table tbody tr .phase"]),
    ("/jobs/?state=waiting&ordering=name", "document.getElementById('job-table') !== null",
     ["#job-table tbody tr .card-title a", "#job-table tbody tr .phase", "#job-table tbody tr .reason"]),
    ("/jobs/mine/", "document.getElementById('job-table') !== null",
     ["#job-table tbody tr .card-title a", "#job-table tbody tr .phase"]),
    ("/jobs/pending/", "document.getElementById('pending-rows') !== null",
     ["#pending-table tbody tr .reason"]),
    ("/jobs/{gpt_giant}/", "document.querySelector('#gang .bar') !== null",
     ["#job-phase", "#reason h2", "#reason .reason"]),
    ("/nodes/", "document.getElementById('node-heatmap').querySelector('.main-svg') !== null",
     ["h1", "#node-heatmap .main-svg"]),
    ("/nodes/gpu-01/", "document.getElementById('node-tasks') !== null",
     ["#node-figures tr[data-dim=cpu]", "#node-figures tr[data-dim=memory]"]),
    ("/shards/", "document.getElementById('shard-table') !== null",
     ["h1", "#shard-table tbody tr .card-title a"]),
    ("/shards/gpu/", "document.getElementById('shard-nodes') !== null",
     ["h1 #shard-mode", "#shard-policy table"]),
    ("/jobs/nlp/bert-pretrain/", "document.getElementById('task-table') !== null",
     ["#job-phase", "#reason h2"]),
    ("/mine/", "document.getElementById('my-queues') !== null",
     ["#my-queues tbody tr .card-title", "#my-queues tbody tr td[data-label] .bar"]),
    ("/audit/", "document.getElementById('audit') !== null",
     ["#audit tbody tr .card-title", "#audit tbody tr td[data-label=When]"]),
    ("/tokens/", "document.getElementById('token-create-form') !== null", ["#token-create-form"]),
    ("/api/docs/", "document.querySelectorAll('.swagger-ui .opblock').length > 10",
     [".swagger-ui .opblock-summary"]),
]
LOGIN = ["input[name=username]", "input[name=password]", "button[type=submit]"]
# The right edges of the widest elements, to say what overflows when something does; and each
# first-screen element that is missing, hidden, or not wholly inside the first viewport.
OVERFLOW = """(first) => {
  const width = window.innerWidth, height = window.innerHeight;
  const wide = Array.from(document.querySelectorAll('body *'))
    .filter((el) => el.getBoundingClientRect().right > width + 0.5)
    .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
         (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') +
         ' ' + Math.round(el.getBoundingClientRect().right));
  const off = [];
  for (const selector of first) {
    const el = document.querySelector(selector);
    const r = el && el.getBoundingClientRect();
    if (!r || r.width === 0 || r.height === 0) { off.push(selector + ': not shown'); continue; }
    if (r.left < -0.5 || r.right > width + 0.5 || r.top < -0.5 || r.bottom > height + 0.5) {
      off.push(selector + ': ' + [r.left, r.top, r.right, r.bottom].map(Math.round).join(','));
    }
  }
  return {scroll: document.documentElement.scrollWidth, inner: width, wide: wide.slice(0, 8),
          scrolled: [window.scrollX, window.scrollY], off};
}"""


def _slug(path: str) -> str:
    return re.sub(r"[/?&=]+", "-", path.strip("/")) or "overview"


@pytest.fixture
def my_job(demo):
    """A job the lead submitted (so that "My jobs" lists one)."""
    from schedweb.core import services

    services.job_submit(namespace="nlp", name="lead-eval", queue="nlp-eval", submitted_by=demo["lead"],
                        tasks=[{"name": "lead-eval-0", "request": {"cpu": "1", "memory": "1Gi"}}])
    # Two NodeShards for the shard pages: the GPU nodes, and the rest (soft, a node range).
    from schedweb.core.models import Node

    names = sorted(Node.objects.values_list("name", flat=True))
    gpu = [n for n in names if n.startswith("gpu")]
    services.node_shard_create(name="gpu", scheduler_name="volcano-gpu", nodes_desired=gpu)
    services.node_shard_create(name="general-purpose-batch", scheduler_name="volcano-general-purpose-batch",
                               mode="soft", nodes_desired=[n for n in names if n not in gpu], min_nodes=2,
                               max_nodes=40, cpu_utilization_min=0.25, cpu_utilization_max=0.75)
    return demo


# A context's first queue page loads the 4.7 MB Plotly bundle: on a busy machine that alone may
# take longer than the 15 s other steps get.
LOAD_TIMEOUT_MS = 60000


def _check(page, url: str, ready: str, first: list[str]) -> dict:
    response = page.goto(url, timeout=LOAD_TIMEOUT_MS)
    assert response.status == 200, url
    page.wait_for_function(f"() => {ready}", timeout=LOAD_TIMEOUT_MS)
    page.wait_for_load_state("networkidle")
    return page.evaluate(OVERFLOW, first)


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=[str(w) for w, _ in WIDTHS])
def test_every_page_fits_and_shows_what_it_is_for_first(browser, live_server, my_job, width, height):
    """One context per width, each page loaded once: no page scrolls sideways, and its first
    screen (a job's state and reason, a node's allocatable and used, ...) is in the first viewport."""
    from schedweb.core.models import Job

    ids = {"gpt_giant": Job.objects.get(namespace="nlp", name="gpt-giant").pk}
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/accounts/login/")
    found = {"/accounts/login/": page.evaluate(OVERFLOW, LOGIN)}
    screenshot(page, f"layout-{width}-login")
    page.fill("input[name=username]", "lead")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    for path, ready, first in PAGES:
        found[path] = _check(page, live_server.url + path.format(**ids), ready, first)
        screenshot(page, f"layout-{width}-{_slug(path.format(**ids))}")
    overflowing = {path: f for path, f in found.items() if f["scroll"] > f["inner"]}
    assert overflowing == {}
    assert {path: f["off"] for path, f in found.items() if f["off"]} == {}
    assert all(f["inner"] == width and f["scrolled"] == [0, 0] for f in found.values())
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
    page.set_default_navigation_timeout(LOAD_TIMEOUT_MS)  # the queue page loads Plotly
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

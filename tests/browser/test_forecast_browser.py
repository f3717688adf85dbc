"""Issue 20 in a browser: the estimated start on the job page and the pending list, and the queue
edit form's Preview (htmx swaps the edit section in place; a refused change shows its errors),
each without a Content-Security-Policy violation. Screenshots: var/screenshots/forecast-*.png,
queue-preview*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.browser.conftest import SCREENSHOTS, screenshot
from tests.browser.test_csp_browser import _recording

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DECLARED = "Every running job it waits for declared its duration: it ends at its start plus that."


@pytest.fixture
def estimated(demo):
    """One forecast of the demo (manage.py forecast's), then the first waiting demo job that can
    run (by namespace, name) given an estimate 25 min (and 20 s, so that seconds of test time
    never round it to 24) ahead, basis declared: the other estimates depend on the clock."""
    from django.utils import timezone

    from schedweb.dashboard.pending import waiting_jobs
    from schedweb.scheduling.forecast_task import run_forecast
    from schedweb.scheduling.models import JobForecast

    run = run_forecast()
    assert run.errors == "" and run.jobs == JobForecast.objects.count() > 0
    row = (JobForecast.objects.filter(job__in=waiting_jobs()).exclude(job__reason_code="NeverFits")
           .select_related("job").order_by("job__namespace", "job__name").first())
    start = timezone.now() + timedelta(minutes=25, seconds=20)
    JobForecast.objects.filter(pk=row.pk).update(estimated_start=start, estimate_basis="declared")
    return row.job


def test_the_job_page_and_the_pending_list_show_the_estimated_start(signed_in, live_server, estimated):
    from schedweb.dashboard.pending import waiting_jobs
    from schedweb.scheduling.models import JobForecast

    page = signed_in("viewer")
    console = _recording(page)
    job = f"{estimated.namespace}/{estimated.name}"
    page.goto(f"{live_server.url}/jobs/{job}/")
    sentence = "Expected to start in about 25 min, if running jobs end as declared."
    assert page.inner_text("#estimate-sentence strong") == sentence
    basis = page.locator("#estimate-basis .basis")
    assert (basis.inner_text(), basis.get_attribute("title")) == ("Basis: declared durations", DECLARED)
    # The legend opens and names every basis.
    assert not page.is_visible("#forecast-legend dl")
    page.click("#forecast-legend summary")
    assert page.eval_on_selector_all("#forecast-legend dt", "els => els.map(e => e.textContent.trim())") == [
        "declared durations", "queue history", "unknown", "beyond the horizon", "never"]
    page.locator("#forecast").scroll_into_view_if_needed()
    screenshot(page, "forecast-job-page")

    page.goto(f"{live_server.url}/jobs/pending/")
    cell = page.locator(f'#pending-table tr[data-job="{job}"] .estimate')
    assert cell.inner_text() == sentence.rstrip(".")
    assert cell.get_attribute("title").startswith(f"Basis: declared durations. {DECLARED} Estimated start ")
    # Every waiting job the forecast answered has its estimate (those that can never run say so);
    # the others are elastic jobs whose minimum runs: they have started.
    shown = dict(page.eval_on_selector_all("#pending-table tr[data-job]", """rows => rows.map(r => [
        r.dataset.job, [r.querySelector('.estimate').dataset.basis, r.querySelector('.estimate').textContent]
    ])"""))
    stored = {f"{ns}/{name}": basis for ns, name, basis in JobForecast.objects.values_list(
        "job__namespace", "job__name", "estimate_basis")}
    never = {f"{ns}/{name}" for ns, name in waiting_jobs().filter(reason_code="NeverFits")
             .values_list("namespace", "name")}
    assert {j: basis for j, (basis, _) in shown.items() if basis != "none"} == stored
    assert {j for j, (basis, _) in shown.items() if basis == "never"} == never
    assert {text for basis, text in shown.values() if basis == "none"} <= {"The job has started"}
    screenshot(page, "forecast-pending")
    assert page.evaluate("window.__csp") + console == []


def _stored() -> tuple:
    """What a preview must not change: vision's row, the audit log, the change log."""
    from django.db import connection

    from schedweb.audit.models import AuditEntry
    from schedweb.core.models import Queue

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM scheduling_change")
        log = cursor.fetchone()
    vision = Queue.objects.filter(name="vision").values("weight", "deserved", "capability", "updated").get()
    return vision, AuditEntry.objects.count(), log


def test_the_queue_edit_form_previews_a_change_before_saving(signed_in, live_server, demo):
    page = signed_in("lead")  # admin of research, vision's parent
    console = _recording(page)
    page.goto(f"{live_server.url}/queues/vision/")
    page.wait_for_function("() => document.getElementById('chart-cpu-history').querySelector('.main-svg')")
    before = _stored()
    # Under the shipped hierarchical capacity conf vision deserves its spec's 64 cores; 48 is
    # allowed (a raise is not: nlp's 128 and vision's 64 already fill research's 192), and the
    # session's deserved follows it.
    page.fill("#id_deserved", '{"cpu": "48", "memory": "512Gi", "nvidia.com/gpu": 16}')
    page.click("#preview-queue")
    page.wait_for_selector("#queue-preview[data-valid=true]")
    assert page.url == f"{live_server.url}/queues/vision/"  # swapped in place, not a navigation
    assert page.inner_text("#preview-changes tr[data-field=deserved]").split("\t") == [
        "Deserved", "64 cores, 512 GiB of memory, 16 GPUs", "48 cores, 512 GiB of memory, 16 GPUs"]
    cpu = "#preview-queues tbody[data-queue=vision] tr[data-figure=deserved] td[data-dim=cpu]"
    assert (page.inner_text(cpu), page.get_attribute(cpu, "class")) == ("64 cores \u2192 48 cores", "moved")
    roles = page.eval_on_selector_all("#preview-queues tbody",
                                      "els => els.map(e => [e.dataset.queue, e.dataset.role])")
    assert roles[:2] == [["research", "ancestor"], ["vision", "queue"]] and ["nlp", "sibling"] in roles
    assert page.input_value("#id_deserved") == '{"cpu": "48", "memory": "512Gi", "nvidia.com/gpu": 16}'
    assert _stored() == before  # nothing written
    screenshot(page, "queue-preview")
    page.locator("#queue-admin").screenshot(path=str(SCREENSHOTS / "queue-preview-section.png"))

    # A change a limit refuses: a 400 whose form errors htmx swaps in all the same (preview.js).
    page.fill("#id_deserved", '{"cpu": "100", "memory": "512Gi", "nvidia.com/gpu": 16}')
    page.click("#preview-queue")
    page.wait_for_selector("#queue-preview[data-valid=false]")
    message = "Deserved cpu 100 is above the capability cpu 96."
    violations = page.eval_on_selector_all("#preview-violations li", "els => els.map(e => e.innerText)")
    assert f"deserved: {message}" in violations
    assert message in page.inner_text(".field.invalid .errorlist")
    assert _stored() == before
    page.locator("#queue-admin").screenshot(path=str(SCREENSHOTS / "queue-preview-refused.png"))

    # Save still saves, from the same form.
    page.fill("#id_deserved", '{"cpu": "48", "memory": "512Gi", "nvidia.com/gpu": 16}')
    page.click("#save-queue")
    page.wait_for_selector(".messages li")
    assert "Queue vision saved" in page.inner_text(".messages")
    assert _stored()[0]["deserved"]["cpu"] == 48000.0
    assert page.evaluate("window.__csp") + console == []

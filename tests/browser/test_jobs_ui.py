"""The job lists in a browser: filter by state and queue, sort, "My jobs", and cancel with its
confirmation step (the row then reads Cancelled)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def lead_jobs(demo):
    """Two jobs the lead submitted into nlp-eval (a queue under research, which the lead admins)."""
    from schedweb.core import services

    for name in ("lead-a", "lead-b"):
        services.job_submit(namespace="nlp", name=name, queue="nlp-eval", submitted_by=demo["lead"],
                            tasks=[{"name": f"{name}-0", "request": {"cpu": "1", "memory": "1Gi"}}])
    return demo


def _rows(page) -> list[tuple[str, str]]:
    rows = page.eval_on_selector_all("#job-table tbody tr",
                                     "rows => rows.map(r => [r.dataset.job, r.dataset.phase])")
    return [tuple(row) for row in rows]


def test_job_list_filters_and_sorts(signed_in, live_server, lead_jobs):
    from schedweb.core.models import Job

    page = signed_in("viewer")
    page.click("nav a:text-is('Jobs')")
    page.wait_for_url(f"{live_server.url}/jobs/")
    assert len(_rows(page)) == Job.objects.count()
    screenshot(page, "jobs")
    page.select_option("#job-filter select[name=state]", "waiting")
    page.select_option("#job-filter select[name=queue]", "nlp-eval")
    page.click("#job-filter button[type=submit]")
    page.wait_for_url(f"{live_server.url}/jobs/?*state=waiting*")
    expected = sorted(Job.objects.filter(queue__name="nlp-eval", phase__in=("Pending", "Inqueue"))
                      .values_list("namespace", "name", "phase"))
    assert expected and sorted((*uid.split("/"), phase) for uid, phase in _rows(page)) == expected
    assert page.inner_text("#state-tabs a.active") == f"Waiting {len(expected)}"
    # Sort by name (the Job column), then reverse it.
    page.click("#job-table th a:text-is('Job')")
    page.wait_for_url("**ordering=name*")
    names = [uid for uid, _ in _rows(page)]
    assert names == sorted(names)
    page.click("#job-table th a:text-is('Job')")
    page.wait_for_url("**ordering=-name*")
    assert [uid for uid, _ in _rows(page)] == sorted(names, key=lambda u: u.split("/")[1], reverse=True)
    screenshot(page, "jobs-waiting-nlp-eval")
    # The Running tab keeps the queue filter.
    page.click("#state-tabs a[data-state=Running]")
    page.wait_for_url("**state=Running*")
    assert {phase for _, phase in _rows(page)} <= {"Running"}
    assert page.input_value("#job-filter select[name=queue]") == "nlp-eval"


def test_my_jobs_and_cancel_with_confirmation(signed_in, live_server, lead_jobs):
    from schedweb.core.models import Job

    page = signed_in("lead")
    page.click("nav a:text-is('My jobs')")
    page.wait_for_url(f"{live_server.url}/jobs/mine/")
    assert _rows(page) == [("nlp/lead-b", "Pending"), ("nlp/lead-a", "Pending")]
    row = page.locator("tr[data-job='nlp/lead-a']")
    confirm = row.locator("button:text-is('Yes, cancel it')")
    assert not confirm.is_visible()  # the first click only opens the confirmation
    row.locator("summary:has-text('Cancel')").click()
    assert confirm.is_visible()
    cancel_box = row.locator("details.confirm:has(summary:has-text('Cancel')) .confirm-box p")
    assert "Cancel nlp/lead-a? Its waiting tasks fail" in cancel_box.inner_text()
    screenshot(page, "my-jobs-confirm-cancel")
    confirm.click()
    page.wait_for_url(f"{live_server.url}/jobs/mine/")
    assert page.inner_text(".messages li").startswith("Job nlp/lead-a is Cancelled")
    assert _rows(page) == [("nlp/lead-b", "Pending"), ("nlp/lead-a", "Cancelled")]
    assert page.locator("tr[data-job='nlp/lead-a'] details.confirm").count() == 0  # nothing left to cancel
    assert Job.objects.get(name="lead-a").phase == "Cancelled"
    assert Job.objects.get(name="lead-b").phase == "Pending"
    screenshot(page, "my-jobs-cancelled")
    # The job list shows it too.
    page.goto(f"{live_server.url}/jobs/?state=Cancelled&search=lead")
    assert _rows(page) == [("nlp/lead-a", "Cancelled")]


def test_a_viewer_is_offered_no_cancel(signed_in, live_server, lead_jobs):
    page = signed_in("viewer")
    page.goto(f"{live_server.url}/jobs/")
    assert page.locator("#job-table details.confirm").count() == 0
    page.goto(f"{live_server.url}/jobs/mine/")
    assert page.inner_text("#no-jobs").startswith("You have not submitted a job yet")

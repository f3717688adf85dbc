"""Estimated start times on the job page, the job lists and the pending list (issue 20): the stored
forecast's sentence, its basis explained, one query batch per list page."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_submit
from schedweb.core.models import Job, Task, TaskStatus
from schedweb.dashboard.estimates import BASES
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.forecast_task import run_forecast
from schedweb.scheduling.models import ForecastRun, JobForecast

pytestmark = pytest.mark.django_db

DECLARED = "if running jobs end as declared"


def _job(name: str, queue: str, durations: list[float | None], cpu: str = "2") -> Job:
    return job_submit(namespace="ns", name=name, queue=queue, min_member=len(durations),
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": "1Gi"}, "duration": d}
                             for i, d in enumerate(durations)])


def _cluster() -> None:
    """q1 and q2 (the shipped hierarchical capacity conf), two 4-cpu nodes."""
    services.queue_create(name="q1")
    services.queue_create(name="q2")
    for name in ("n0", "n1"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi", "pods": 110})


@pytest.fixture
def forecast(users) -> dict:
    """`long` (q1, 4 x 2 cpu: the whole cluster) Running from t0, two tasks declaring 300 s, two
    900 s; waiting `small` (q1, 2 x 1000 s) and `gang` (q2, 4 x 600 s). One forecast at t0: small
    starts at t0+300 when 4 cpu free up, the gang at t0+1300 when small ends
    (tests/schedweb/scheduling/test_forecast.py has the same cluster forecast from t0+100)."""
    _cluster()
    t0 = timezone.now().replace(microsecond=0)
    long = _job("long", "q1", [300, 300, 900, 900])
    assert cycle_run(now=t0).binds == 4
    agent_step(now=t0)
    assert set(Task.objects.filter(job=long).values_list("status", flat=True)) == {TaskStatus.RUNNING}
    small, gang = _job("small", "q1", [1000, 1000]), _job("gang", "q2", [600] * 4)
    run = run_forecast(now=t0)
    assert (run.errors, run.jobs) == ("", 2)
    return {"t0": t0, "long": long, "small": small, "gang": gang, "users": users}


def _text(fragment: str) -> str:
    """Visible text of an HTML fragment, blanks collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _section(page: str, element_id: str) -> str:
    match = re.search(rf'<section class="card" id="{element_id}"[^>]*>(.*?)</section>', page, re.S)
    assert match, element_id
    return match.group(0)


def _rows(page: str, table_id: str) -> dict[str, str]:
    """data-job -> the row's HTML, for the rows of one table."""
    table = re.search(rf'<table [^>]*id="{table_id}".*?</table>', page, re.S).group(0)
    return dict(re.findall(r'<tr data-job="([^"]+)"[^>]*>(.*?)</tr>', table, re.S))


def _estimate(row: str) -> tuple[str, str, str] | None:
    """(data-basis, title, text) of the estimate in a row, None without one."""
    match = re.search(r'<div class="estimate small" data-basis="([^"]*)" title="([^"]*)">([^<]*)</div>', row)
    return (match.group(1), html.unescape(match.group(2)), html.unescape(match.group(3))) if match else None


def test_the_job_page_says_when_a_waiting_job_should_start(forecast, client_as):
    client = client_as(forecast["users"]["viewer"])
    t0 = forecast["t0"]
    page = client.get("/jobs/ns/small/").content.decode()
    card = _section(page, "forecast")
    # 300 s ahead at the forecast, a second or two less now: "about 5 min".
    assert 'data-basis="declared"' in card
    assert _text(re.search(r'<p class="estimate-sentence".*?</p>', card, re.S).group(0)) == (
        f"Expected to start in about 5 min, {DECLARED}. "
        f"Around {(t0 + timedelta(seconds=300)):%Y-%m-%d %H:%M} UTC.")
    # The time is a <time> element in UTC that the browser rewrites in its own zone (times.js).
    at = (t0 + timedelta(seconds=300)).isoformat()
    assert f'<time class="local" datetime="{at}" data-format="minute">' in card
    assert _text(re.search(r'<p id="estimate-basis">.*?</p>', card, re.S).group(0)) == (
        f"Basis: declared durations {BASES['declared'][1]}")
    assert f'title="{BASES["declared"][1]}"' in card
    assert _text(re.search(r'<p class="muted small" id="estimate-computed">.*?</p>', card, re.S).group(0)
                 ).startswith(f"From the forecast of {t0:%Y-%m-%d %H:%M:%S} UTC (")
    assert "up to " + f"{(t0 + timedelta(seconds=1300)):%Y-%m-%d %H:%M} UTC" in _text(card)  # the run's until
    # The legend explains every basis.
    assert [html.unescape(t) for t in re.findall(r'<dt data-basis="(\w+)">', card)] == list(BASES)
    gang = _section(client.get("/jobs/ns/gang/").content.decode(), "forecast")
    assert "Expected to start in about 22 min, if running jobs end as declared." in _text(gang)  # 1300 s
    # The forecast card sits after the reason card; a running job has none.
    assert page.index('id="reason"') < page.index('id="forecast"') < page.index('id="gang"')
    assert 'id="forecast"' not in client.get("/jobs/ns/long/").content.decode()


def test_the_job_lists_show_the_estimates_of_waiting_jobs(forecast, client_as):
    client = client_as(forecast["users"]["viewer"])
    for path, table in (("/jobs/", "job-table"), ("/jobs/pending/", "pending-table")):
        page = client.get(path).content.decode()
        rows = _rows(page, table)
        found = {job: _estimate(row) for job, row in rows.items()}
        help_text = f"Basis: declared durations. {BASES['declared'][1]}"
        at = {name: forecast["t0"] + timedelta(seconds=s) for name, s in (("small", 300), ("gang", 1300))}
        expected = {
            "ns/small": ("declared", f"{help_text} Estimated start {at['small']:%Y-%m-%d %H:%M} UTC.",
                         f"Expected to start in about 5 min, {DECLARED}"),
            "ns/gang": ("declared", f"{help_text} Estimated start {at['gang']:%Y-%m-%d %H:%M} UTC.",
                        f"Expected to start in about 22 min, {DECLARED}"),
        }
        if path == "/jobs/":
            expected["ns/long"] = None  # every task runs (Inqueue until the next cycle): no estimate
        assert found == expected, path
        assert 'id="forecast-legend"' in page


def _waiting(n: int) -> list[Job]:
    services.queue_create(name="q")
    return [job_submit(namespace="ns", name=f"j{i}", queue="q", min_member=1,
                       tasks=[{"name": f"j{i}-0", "request": {"cpu": "1"}}]) for i in range(n)]


def _store(rows: dict[Job, tuple[float | None, str]], computed, until) -> None:
    """A ForecastRun at `computed` and one JobForecast per job: (seconds from now or None, basis)."""
    ForecastRun.objects.create(computed_at=computed, until=until, jobs=len(rows))
    now = timezone.now()
    JobForecast.objects.bulk_create(
        JobForecast(job=job, estimated_start=None if s is None else now + timedelta(seconds=s),
                    estimate_basis=basis, computed_at=computed, until=until)
        for job, (s, basis) in rows.items())


@pytest.mark.parametrize(("seconds", "basis", "sentence"), [
    (25 * 60, "declared", "Expected to start in about 25 min, if running jobs end as declared"),
    (3 * 3600, "history", "Expected to start in about 3 h, if running jobs take as long as recent jobs of "
                          "their queues"),
    (None, "unknown", "Start time unknown: it waits for running jobs that declared no duration"),
    (None, "beyond_horizon", "Not expected to start within 24 h"),
    (None, "never", "Not expected to start: it cannot run on the cluster as it stands"),
])
def test_each_basis_has_its_sentence_and_tooltip(users, client_as, seconds, basis, sentence):
    (job,) = _waiting(1)
    now = timezone.now()
    _store({job: (seconds, basis)}, now, now + timedelta(hours=24, seconds=30))
    client = client_as(users["viewer"])
    label, meaning = BASES[basis]
    rows = _rows(client.get("/jobs/").content.decode(), "job-table")
    (estimate,) = [_estimate(row) for row in rows.values()]
    assert estimate[0] == basis and estimate[2] == sentence
    assert estimate[1].startswith(f"Basis: {label}. {meaning}")
    card = _section(client.get("/jobs/ns/j0/").content.decode(), "forecast")
    assert f'data-basis="{basis}"' in card and f"{sentence}." in _text(card)
    assert f"Basis: {label} {meaning}" in _text(card)


def test_jobs_without_an_estimate_say_why(users, client_as):
    first, later = _waiting(2)
    client = client_as(users["viewer"])
    page = client.get("/jobs/pending/").content.decode()
    assert {job: _estimate(row)[:3:2] for job, row in _rows(page, "pending-table").items()} == {
        "ns/j0": ("none", "No estimate: no forecast has run yet"),
        "ns/j1": ("none", "No estimate: no forecast has run yet")}
    # A forecast ran after j0 and before j1 arrived, without an estimate for j0: it was not waiting
    # then (an elastic job whose minimum runs has started, whatever more of its tasks wait).
    ForecastRun.objects.create(computed_at=first.created + (later.created - first.created) / 2, jobs=0)
    page = client.get("/jobs/pending/").content.decode()
    assert {job: _estimate(row)[2] for job, row in _rows(page, "pending-table").items()} == {
        "ns/j0": "The job has started",
        "ns/j1": "No estimate yet: the job arrived after the newest forecast"}
    card = _section(client.get("/jobs/ns/j1/").content.decode(), "forecast")
    assert 'data-basis="none"' in card and 'id="estimate-basis"' not in card


@pytest.mark.parametrize("path", ["/jobs/", "/jobs/pending/", "/jobs/?state=waiting"])
def test_a_list_reads_its_estimates_in_one_batch(users, client_as, path):
    jobs = _waiting(12)
    now = timezone.now()
    client = client_as(users["viewer"])

    def queries(count: int) -> int:
        JobForecast.objects.all().delete()
        ForecastRun.objects.all().delete()
        _store({job: (600.0, "declared") for job in jobs[:count]}, now, now + timedelta(hours=1))
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        assert response.content.decode().count('class="estimate small"') == 12
        forecast_reads = [q["sql"] for q in captured.captured_queries if "scheduling_jobforecast" in q["sql"]
                          or "scheduling_forecastrun" in q["sql"]]
        assert len(forecast_reads) == 2, forecast_reads  # the page's rows, the newest run
        return len(captured.captured_queries)

    assert queries(2) == queries(12)

"""GET jobs/{id}/forecast/, namespaces/{ns}/jobs/{name}/forecast/, jobs/forecasts/?ids= (issue 20)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.api.views import forecast as forecast_view
from schedweb.core.job_services import job_submit
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.forecast_task import run_forecast

from .conftest import make_node, make_queue

pytestmark = pytest.mark.django_db


def _iso(t) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _job(name: str, queue: str, durations: list[float]):
    return job_submit(namespace="ns", name=name, queue=queue, min_member=len(durations),
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": "2", "memory": "1Gi"}, "duration": d}
                             for i, d in enumerate(durations)])


@pytest.fixture
def cluster(monkeypatch):
    """tests/schedweb/scheduling/test_forecast.py's two-queue cluster: `long` Running since t0 (its
    tasks end at t0+300 and t0+900), `small` waits until t0+300, the gang until t0+1300; the
    forecast ran at t0+100, the requests come at t0+100 too."""
    make_queue("q1")
    make_queue("q2")
    make_node("n0", cpu="4", memory="8Gi")
    make_node("n1", cpu="4", memory="8Gi")
    t0 = timezone.now().replace(microsecond=0) - timedelta(seconds=200)
    long = _job("long", "q1", [300, 300, 900, 900])
    assert cycle_run(now=t0).binds == 4
    agent_step(now=t0)
    cycle_run(now=t0 + timedelta(seconds=1))  # `long` Running
    small, gang = _job("small", "q1", [1000, 1000]), _job("gang", "q2", [600] * 4)
    assert run_forecast(now=t0 + timedelta(seconds=100)).errors == ""
    monkeypatch.setattr(forecast_view, "now", lambda: t0 + timedelta(seconds=100))
    return t0, {"long": long, "small": small, "gang": gang}


def _expected(t0, jobs) -> dict[str, dict]:
    computed, until = _iso(t0 + timedelta(seconds=100)), _iso(t0 + timedelta(seconds=1300))
    return {
        "gang": {"job": jobs["gang"].pk, "uid": "ns/gang", "estimated_start": until,
                 "estimate_basis": "declared",
                 "sentence": "expected to start in about 20 min, if running jobs end as declared",
                 "computed_at": computed, "until": until},
        "small": {"job": jobs["small"].pk, "uid": "ns/small",
                  "estimated_start": _iso(t0 + timedelta(seconds=300)), "estimate_basis": "declared",
                  "sentence": "expected to start in about 3 min, if running jobs end as declared",
                  "computed_at": computed, "until": until},
        "long": {"job": jobs["long"].pk, "uid": "ns/long", "estimated_start": None, "estimate_basis": None,
                 "sentence": "the job has started", "computed_at": computed, "until": None},
    }


def test_one_job_by_id_and_by_namespace_and_name(cluster, make_user, client_for):
    t0, jobs = cluster
    client = client_for(make_user("reader"))
    expected = _expected(t0, jobs)
    for name in ("gang", "small", "long"):
        by_id = client.get(f"/api/v1/jobs/{jobs[name].pk}/forecast/")
        by_name = client.get(f"/api/v1/namespaces/ns/jobs/{name}/forecast/")
        assert (by_id.status_code, by_id.json()) == (200, expected[name])
        assert (by_name.status_code, by_name.json()) == (200, expected[name])


def test_batch_for_the_job_lists(cluster, make_user, client_for):
    t0, jobs = cluster
    client = client_for(make_user("reader"))
    expected = _expected(t0, jobs)
    ids = f"{jobs['gang'].pk},{jobs['long'].pk},999999,{jobs['small'].pk}"
    response = client.get(f"/api/v1/jobs/forecasts/?ids={ids}")
    assert response.status_code == 200
    assert response.json() == {"results": [expected["gang"], expected["long"], expected["small"]]}
    # Without ids: every job the newest forecast answered, by id, paginated.
    page = client.get("/api/v1/jobs/forecasts/").json()
    assert page == {"count": 2, "next": None, "previous": None, "continue": None,
                    "results": [expected["small"], expected["gang"]]}
    later = _job("later", "q2", [60])
    assert client.get(f"/api/v1/jobs/forecasts/?ids={later.pk}").json()["results"][0]["sentence"] == \
        "no estimate yet: the job arrived after the newest forecast"


@pytest.mark.parametrize("query,message", [
    ("ids=1,abc", "Expected job ids (positive integers), got 'abc'."),
    ("ids=0", "Expected job ids (positive integers), got '0'."),
    ("ids=99999999999", "Expected job ids (positive integers), got '99999999999'."),
    ("ids=" + ",".join(str(i) for i in range(1, 1002)), "At most 1000 ids at once, got 1001."),
])
def test_bad_ids_are_a_400_naming_the_parameter(make_user, client_for, query, message):
    response = client_for(make_user("reader")).get(f"/api/v1/jobs/forecasts/?{query}")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid", "message": f"ids: {message}",
                                         "fields": {"ids": [message]}}}


def test_unknown_jobs_404_and_anonymous_401(make_user, client_for):
    client = client_for(make_user("reader"))
    response = client.get("/api/v1/jobs/424242/forecast/")
    assert (response.status_code, response.json()["error"]["message"]) == (404, "No job with id 424242.")
    assert client.get("/api/v1/jobs/99999999999999999999/forecast/").status_code == 404
    response = client.get("/api/v1/namespaces/ns/jobs/nope/forecast/")
    assert (response.status_code, response.json()["error"]["message"]) == (404, "No job ns/nope.")
    assert client_for(None).get("/api/v1/jobs/forecasts/").status_code == 401


def test_before_any_forecast(make_user, client_for):
    make_queue("q")
    job = _job("first", "q", [60])
    body = client_for(make_user("reader")).get(f"/api/v1/jobs/{job.pk}/forecast/").json()
    assert body == {"job": job.pk, "uid": "ns/first", "estimated_start": None, "estimate_basis": None,
                    "sentence": "no estimate: no forecast has run yet", "computed_at": None, "until": None}

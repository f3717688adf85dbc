"""Job endpoints: submit with tasks, validation, idempotency, list filters/ordering, detail, cancel."""

from __future__ import annotations

import json

import pytest

from schedweb.api import commands
from schedweb.core import services
from schedweb.core.models import Job, Task

from .conftest import job_body, make_job, make_queue

GI = 2**30


@pytest.fixture
def setup(make_user, client_for):
    user = make_user("sub")
    team = make_queue("team", submitter_users=[user])
    leaf = make_queue("leaf", team)
    return client_for(user), user, team, leaf


def test_submit_creates_job_with_all_tasks(setup):
    client, user, _, _ = setup
    response = client.post("/api/v1/jobs/", job_body("leaf", tasks=3, min_task_member={"": 3}), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["uid"], body["queue"], body["phase"], body["min_member"], body["submitted_by"]) == (
        "ns1/job1", "leaf", "Pending", 3, "sub")
    assert [(t["name"], t["status"], t["request"]) for t in body["tasks"]] == [
        (f"job1-{i}", "Pending", {"cpu": 1, "memory": GI}) for i in range(3)]
    assert Task.objects.filter(job__name="job1").count() == 3


@pytest.mark.parametrize(("change", "field"), [
    ({"queue": "ghost"}, "queue"),
    ({"queue": "team"}, "queue"),                      # not a leaf
    ({"min_member": 5}, "min_member"),                 # above the task count
    ({"namespace": "Bad_NS"}, "namespace"),
    ({"priority_class": "nope"}, "priority_class"),
    ({"tasks": []}, "tasks"),
    ({"tasks": [{"name": "t", "request": {"cpu": "12x"}}]}, "tasks[0].request"),
    ({"tasks": [{"name": "t"}, {"name": "t"}]}, "tasks[1].name"),
    ({"tasks": [{"name": "t", "gpu": 1}]}, "tasks[0].gpu"),
    ({"min_task_member": {"worker": 2}}, "min_task_member"),
    ({"extra": True}, "extra"),
])
def test_submit_rejects_bad_input_naming_the_field(setup, change, field):
    client = setup[0]
    body = {**job_body("leaf", tasks=1), "min_member": 1, **change}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()


def test_closed_queue_rejects_jobs(setup):
    client, _, team, leaf = setup
    services.queue_set_state(queue=leaf, state="Closed")
    response = client.post("/api/v1/jobs/", job_body("leaf"), format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert fields == {"queue": ["Queue 'leaf' is Closed; it accepts no new jobs."]}


def test_cancelling_a_completed_job_is_400(setup):
    client, user, _, leaf = setup
    job = make_job(leaf, "done", user=user)
    Job.objects.filter(pk=job.pk).update(phase="Completed")
    response = client.post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == 400 and "phase" in response.json()["error"]["fields"]


def test_duplicate_job_name_is_409_conflict(setup):
    client = setup[0]
    assert client.post("/api/v1/jobs/", job_body("leaf"), format="json").status_code == 201
    response = client.post("/api/v1/jobs/", job_body("leaf"), format="json")
    assert response.status_code == 409
    assert response.json()["error"] == {"code": "conflict", "message": "name: Job ns1/job1 already exists.",
                                        "fields": {"name": ["Job ns1/job1 already exists."]}}
    assert Job.objects.count() == 1


def test_idempotency_key_returns_the_first_job(setup):
    client = setup[0]
    first = client.post("/api/v1/jobs/", job_body("leaf"), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = client.post("/api/v1/jobs/", job_body("leaf"), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert Job.objects.count() == 1
    reused = client.post("/api/v1/jobs/", job_body("leaf", "job2"), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert reused.status_code == 409
    error = reused.json()["error"]
    assert (error["code"], list(error["fields"])) == ("idempotency_key_reused", ["Idempotency-Key"])
    assert Job.objects.count() == 1


def test_idempotency_key_is_bound_to_the_body_not_its_spelling(setup):
    """Key order and spacing do not change the body; any other change (even a default made
    explicit) is another request: 409, and nothing stored."""
    client = setup[0]
    body = job_body("leaf")
    first = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-b")
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2)
    again = client.generic("POST", "/api/v1/jobs/", reordered, content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY="k-b")
    assert (first.status_code, again.status_code, again["Idempotent-Replayed"]) == (201, 201, "true")
    changed = client.post("/api/v1/jobs/", {**body, "preemptable": True}, format="json",
                          HTTP_IDEMPOTENCY_KEY="k-b")
    assert (changed.status_code, changed.json()["error"]["code"]) == (409, "idempotency_key_reused")
    assert Job.objects.get().idempotency_hash == commands.body_hash(body)


def _blind_first_read(monkeypatch) -> list[int]:
    """The submission's first read misses what is stored (as a concurrent retry's read can): the
    insert then meets the unique constraints and the second read (the race check) sees all."""
    from schedweb.api import commands

    real, calls = commands.load_context, []

    def blind(drafts, **kwargs):
        calls.append(1)
        ctx = real(drafts, **kwargs)
        if len(calls) == 1:
            ctx.keys, ctx.taken = {}, set()
        return ctx

    monkeypatch.setattr(commands, "load_context", blind)
    return calls


def test_idempotency_race_returns_the_winner(setup, monkeypatch):
    """A concurrent retry that passed the read hits the unique constraint and returns the winner."""
    client, user, _, leaf = setup
    winner = make_job(leaf, "job1", user=user, idempotency_key="k-2")
    calls = _blind_first_read(monkeypatch)
    response = client.post("/api/v1/jobs/", job_body("leaf"), format="json", HTTP_IDEMPOTENCY_KEY="k-2")
    assert (response.status_code, response.json()["id"], len(calls)) == (201, winner.id, 2)
    assert response["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1


def test_name_race_is_a_409_conflict(setup, monkeypatch):
    """Both submissions passed every check; the loser's INSERT violates the unique constraint."""
    client, user, _, leaf = setup
    make_job(leaf, "job9", user=user)
    calls = _blind_first_read(monkeypatch)
    response = client.post("/api/v1/jobs/", job_body("leaf", "job9"), format="json")
    assert (response.status_code, len(calls)) == (409, 2)
    assert response.json()["error"]["fields"] == {"name": ["Job ns1/job9 already exists."]}
    assert Job.objects.count() == 1


def test_list_filters_search_and_ordering(setup):
    client, user, team, leaf = setup
    other = make_queue("other", team)
    make_job(leaf, "alpha", namespace="ns1")
    beta = make_job(leaf, "beta", namespace="ns2")
    make_job(other, "gamma", namespace="ns1")
    Job.objects.filter(pk=beta.pk).update(phase="Running", reason_code="NodeFit")

    def names(query: str) -> list[str]:
        response = client.get(f"/api/v1/jobs/{query}")
        assert response.status_code == 200, response.content
        return [j["name"] for j in response.json()["results"]]

    assert names("?ordering=name") == ["alpha", "beta", "gamma"]
    assert names("?ordering=-name") == ["gamma", "beta", "alpha"]
    assert names("?queue=leaf&ordering=name") == ["alpha", "beta"]
    assert names("?namespace=ns1&ordering=name") == ["alpha", "gamma"]
    assert names("?phase=Running") == ["beta"]
    assert names("?phase=Pending&phase=Running&ordering=name") == ["alpha", "beta", "gamma"]
    assert names("?reason_code=NodeFit") == ["beta"]
    assert names("?search=amm") == ["gamma"]
    page = client.get("/api/v1/jobs/?ordering=name&limit=1&offset=1").json()
    assert page["count"] == 3 and [j["name"] for j in page["results"]] == ["beta"]
    assert client.get("/api/v1/jobs/?phase=Nope").status_code == 400


@pytest.mark.parametrize(("query", "limit"), [("", 50), ("?limit=5", 5), ("?limit=1000", 1000)])
def test_page_size_defaults_up_to_the_maximum(query, limit):
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from schedweb.api.pagination import ApiPagination

    request = Request(APIRequestFactory().get(f"/api/v1/jobs/{query}"))
    assert ApiPagination().get_limit(request) == limit


def test_detail_shows_tasks_and_reason(setup):
    client, user, _, leaf = setup
    job = make_job(leaf, "j", tasks=1)
    Job.objects.filter(pk=job.pk).update(reason_code="QueueOverCapability", reason_message="queue full",
                                         reason_details={"queue": "leaf"})
    body = client.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["reason"]["code"] == "QueueOverCapability" and body["reason"]["message"] == "queue full"
    assert body["reason_details"] == {"queue": "leaf"}
    assert [t["uid"] for t in body["tasks"]] == ["ns1/j/j-0"]


@pytest.mark.parametrize("method", ["delete", "post"])
def test_cancel_releases_tasks(setup, method):
    client, user, _, leaf = setup
    job = make_job(leaf, "j", tasks=2, user=user)
    if method == "delete":
        assert client.delete(f"/api/v1/jobs/{job.id}/").status_code == 204
    else:
        response = client.post(f"/api/v1/jobs/{job.id}/cancel/")
        assert response.status_code == 200 and response.json()["phase"] == "Cancelled"
    job.refresh_from_db()
    assert job.phase == "Cancelled"
    assert set(Task.objects.filter(job=job).values_list("status", flat=True)) <= {"Releasing", "Failed",
                                                                                   "Succeeded"}


def test_detail_shows_the_reason_timeline_written_by_cycles(setup):
    from schedweb.scheduling.cycle import cycle_run

    from .conftest import make_node

    client = setup[0]
    make_node("n1", cpu="1", memory="4Gi")  # the 2-task gang needs 2 cpu: it cannot start
    created = client.post("/api/v1/jobs/", job_body("leaf", tasks=2), format="json")
    assert created.status_code == 201
    cycle_run()
    cycle_run()  # the same reason again: the span grows, no new row
    body = client.get(f"/api/v1/jobs/{created.json()['id']}/").json()
    history = body["reason_history"]
    assert len(history) == 1
    assert (history[0]["code"], history[0]["current"]) == (body["reason"]["code"], True)
    assert history[0]["message"] == body["reason"]["message"] and history[0]["message"]
    assert history[0]["last_seen"] > history[0]["first_seen"]

"""Jobs in bulk (issue 22): POST /api/v1/jobs/batch/ (all or nothing, or ?partial=true per item,
an idempotency_key per item) and POST /api/v1/jobs/cancel/ (by ids, namespace + name prefix, or
queue; each job checked and answered)."""

from __future__ import annotations

import json

import pytest
from django.test.utils import CaptureQueriesContext

from schedweb.audit.models import AuditEntry
from schedweb.core.models import Job, Task

from .conftest import make_job, make_node, make_queue


@pytest.fixture
def portal(make_user, client_for):
    user = make_user("portal")
    make_queue("sweeps", submitter_users=[user])
    make_queue("private")
    make_node("n1", cpu="64", memory="256Gi")
    return client_for(user), user


def item(name: str, queue: str = "sweeps", tasks: int = 2, **extra):
    return {"namespace": "sw", "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": "w", "replicas": tasks, "request": {"cpu": "1"}}], **extra}


def post(client, jobs, partial: bool = False):
    url = f"/api/v1/jobs/batch/{'?partial=true' if partial else ''}"
    return client.post(url, {"jobs": jobs}, format="json")


def test_a_batch_is_written_in_one_statement(portal):
    from django.db import connection

    client, _ = portal
    with CaptureQueriesContext(connection) as ctx:
        response = post(client, [item(f"j{i}") for i in range(20)])
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["created"], body["replayed"], body["failed"]) == (20, 0, 0)
    assert [(r["index"], r["status"], r["job"]["name"], r["job"]["task_count"]) for r in body["results"]] == [
        (i, 201, f"j{i}", 2) for i in range(20)]
    assert Task.objects.filter(job__namespace="sw").count() == 40
    inserts = [q["sql"] for q in ctx.captured_queries if "INSERT" in (q["sql"] or "")]
    if connection.vendor == "postgresql":
        assert len(inserts) == 1  # every job and task in one statement


def test_all_or_nothing_lists_every_bad_item_and_writes_nothing(portal):
    client, _ = portal
    make_job(make_queue("elsewhere"), "taken", namespace="sw")
    response = post(client, [item("ok"), item("bad", tasks=0), item("taken"), item("x", queue="nope")])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"] == "jobs[1]: tasks: A job needs at least one task. (nothing was submitted)"
    assert error["fields"] == {"jobs[1].tasks": ["A job needs at least one task."],
                               "jobs[2].name": ["Job sw/taken already exists."],
                               "jobs[3].queue": ["Unknown queue 'nope'."]}
    assert not Job.objects.filter(name="ok").exists()


@pytest.mark.parametrize(("jobs", "code", "status"), [
    ([item("a"), item("b", queue="private")], "permission_denied", 403),
    ([item("a"), item("a")], "conflict", 409),
])
def test_all_or_nothing_answers_with_the_first_failing_items_status(portal, jobs, code, status):
    response = post(portal[0], jobs)
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert Job.objects.filter(namespace="sw").count() == 0


def test_partial_writes_the_good_items_and_answers_each(portal):
    client, _ = portal
    response = post(client, [item("a"), item("b", queue="private"), item("a"), item("c", tasks=0), item("d")],
                    partial=True)
    assert response.status_code == 200
    body = response.json()
    assert (body["created"], body["replayed"], body["failed"]) == (2, 0, 3)
    assert [(r["status"], (r["error"] or {}).get("code")) for r in body["results"]] == [
        (201, None), (403, "permission_denied"), (409, "conflict"), (400, "invalid"), (201, None)]
    assert body["results"][2]["error"]["fields"] == {"name": ["Job sw/a is submitted twice in this request."]}
    assert sorted(Job.objects.filter(namespace="sw").values_list("name", flat=True)) == ["a", "d"]


def test_an_idempotency_key_per_item(portal):
    client, _ = portal
    first = post(client, [item("a", idempotency_key="k-a"), item("b", idempotency_key="k-b")])
    assert first.status_code == 201
    again = post(client, [item("a", idempotency_key="k-a"), item("c", idempotency_key="k-c"),
                          item("other", idempotency_key="k-b")], partial=True).json()
    assert [(r["status"], r["job"] and r["job"]["name"]) for r in again["results"]] == [
        (200, "a"), (201, "c"), (409, None)]
    assert again["results"][0]["job"]["id"] == first.json()["results"][0]["job"]["id"]
    assert again["results"][2]["error"]["code"] == "idempotency_key_reused"
    assert (again["created"], again["replayed"], again["failed"]) == (1, 1, 1)
    assert Job.objects.filter(namespace="sw").count() == 3


def test_the_same_key_twice_in_one_batch_is_one_job(portal):
    response = post(portal[0], [item("a", idempotency_key="k"), item("a", idempotency_key="k")])
    assert [(r["status"], r["job"]["name"]) for r in response.json()["results"]] == [(201, "a"), (200, "a")]
    assert Job.objects.filter(namespace="sw").count() == 1


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"jobs": []}, "jobs", "Expected a non-empty list of jobs."),
    ({"jobs": [item("a")], "extra": 1}, "extra", "Unknown field."),
    ({"jobs": [item("a")] * 3}, "jobs", "At most 2 jobs per batch (MAX_JOBS_PER_BATCH), got 3."),
    ([item("a")], "non_field_errors", 'Expected a JSON object {"jobs": [...]}.'),
])
def test_the_batch_itself_is_checked(portal, settings, body, field, message):
    settings.MAX_JOBS_PER_BATCH = 2
    response = portal[0].post("/api/v1/jobs/batch/", body, format="json")
    assert (response.status_code, response.json()["error"]["fields"]) == (400, {field: [message]})


def test_a_bad_item_field_is_named_with_its_index(portal):
    bad = {**item("b"), "tasks": [{"name": "w", "request": {"cpu": "12x"}}]}
    response = post(portal[0], [item("a"), bad])
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["jobs[1].tasks[0].request"]
    assert fields["jobs[1].tasks[0].request"][0].startswith("cpu: invalid quantity '12x'")


# ---------------------------------------------------------------------------------- bulk cancel

@pytest.fixture
def jobs(portal, make_user):
    client, user = portal
    sweeps = make_queue("other", submitter_users=[user])
    mine = [make_job(sweeps, f"sweep-{i}", namespace="sw", user=user) for i in range(3)]
    theirs = make_job(sweeps, "sweep-x", namespace="sw", user=make_user("someone"))
    done = make_job(sweeps, "sweep-done", namespace="sw", user=user)
    Job.objects.filter(pk=done.pk).update(phase="Completed")
    keep = make_job(sweeps, "keep", namespace="sw", user=user)
    return client, mine, theirs, done, keep


def cancel(client, body):
    return client.post("/api/v1/jobs/cancel/", body, format="json")


def test_cancel_by_ids_answers_each(jobs):
    client, mine, theirs, done, _ = jobs
    response = cancel(client, {"ids": [mine[0].id, theirs.id, done.id, 999999, mine[0].id]})
    assert response.status_code == 200
    body = response.json()
    assert [(r["id"], r["status"], r["phase"]) for r in body["results"]] == [
        (mine[0].id, 200, "Cancelled"), (theirs.id, 403, None), (done.id, 400, None), (999999, 404, None)]
    assert body["results"][2]["error"]["fields"] == {"phase": ["Job sw/sweep-done has already completed."]}
    assert (body["cancelled"], body["failed"], body["more"]) == (1, 3, False)
    assert Job.objects.get(pk=theirs.id).phase == "Pending"
    assert AuditEntry.objects.filter(object_type="job", action="cancel").count() == 1


def test_cancel_by_namespace_and_prefix_takes_unfinished_jobs_only(jobs):
    client, mine, theirs, done, keep = jobs
    body = cancel(client, {"namespace": "sw", "name_prefix": "sweep-"}).json()
    assert [(r["uid"], r["status"]) for r in body["results"]] == [(f"sw/sweep-{i}", 200) for i in range(3)]
    assert (body["cancelled"], body["forbidden"], body["more"]) == (3, 1, False)  # sweep-x is not ours
    assert set(Task.objects.filter(job__in=mine).values_list("status", flat=True)) == {"Failed"}
    assert Job.objects.get(pk=keep.id).phase == "Pending"


def test_cancel_by_queue_in_pages(jobs, settings):
    client, mine, *_ = jobs
    settings.MAX_JOBS_PER_BATCH = 2
    pages = [cancel(client, {"queue": "other"}).json() for _ in range(3)]
    assert [([r["uid"] for r in p["results"]], p["forbidden"], p["more"]) for p in pages] == [
        (["sw/sweep-0", "sw/sweep-1"], 0, True), (["sw/sweep-2", "sw/keep"], 1, False), ([], 1, False)]


@pytest.mark.parametrize(("body", "field", "message"), [
    ({}, "non_field_errors", "Give ids, or a namespace and/or a queue (optionally with name_prefix)."),
    ({"ids": [1], "queue": "other"}, "queue", "Give either ids or a selector, not both."),
    ({"queue": "nope"}, "queue", "Unknown queue 'nope'."),
    ({"namespace": "Bad NS"}, "namespace", "This value does not match the required pattern."),
])
def test_a_bad_selector_is_400(jobs, body, field, message):
    response = cancel(jobs[0], body)
    assert (response.status_code, response.json()["error"]["fields"]) == (400, {field: [message]})


@pytest.mark.parametrize("text", ["\x00", "\ud800", "a\x07b"])
def test_text_that_cannot_be_looked_up_is_a_400_not_a_500(portal, text):
    client, _ = portal
    jobs = [item("a", queue=text), item("b", idempotency_key=text), {**item("c"), "priority_class": text}]
    # json.dumps escapes what the test client's own encoder refuses (a lone surrogate).
    response = client.generic("POST", "/api/v1/jobs/batch/?partial=true", json.dumps({"jobs": jobs}),
                              content_type="application/json")
    assert response.status_code == 200, response.content
    assert [(r["status"], sorted(r["error"]["fields"])) for r in response.json()["results"]] == [
        (400, ["queue"]), (400, ["idempotency_key"]), (400, ["priority_class"])]
    for body in ({"queue": text}, {"namespace": "sw", "name_prefix": text}):
        answer = client.generic("POST", "/api/v1/jobs/cancel/", json.dumps(body),
                                content_type="application/json")
        assert (answer.status_code, list(answer.json()["error"]["fields"])) == (400, list(body)[-1:])

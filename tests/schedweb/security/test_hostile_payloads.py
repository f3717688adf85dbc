"""Oversized bodies, malformed bodies, deep and cyclic queue trees, and a 10,000-task job."""

from __future__ import annotations

import json
import time

import pytest
from django.core.exceptions import ValidationError

from schedweb.core import services
from schedweb.core.models import Job, Queue, Task

ENVELOPE_KEYS = {"code", "message", "fields"}


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("staff", staff=True))


def test_body_over_the_limit_is_413_envelope(staff, settings):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 10 * 1024 * 1024
    body = json.dumps({"name": "n1", "allocatable": {"cpu": "1"}, "labels": {"x": "y" * (11 * 1024 * 1024)}})
    response = staff.generic("POST", "/api/v1/nodes/", body, content_type="application/json")
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "payload_too_large" and set(error) == ENVELOPE_KEYS
    assert error["message"] == (f"The request body ({len(body)} bytes) is larger than the limit of "
                                f"{10 * 1024 * 1024} bytes.")


def test_body_over_the_limit_outside_the_api_is_plain_413(db, client):
    response = client.generic("POST", "/admin/login/", "a=" + "x" * (10 * 1024 * 1024 + 1),
                              content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413 and response["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize("body,content_type", [
    (b"{not json", "application/json"),
    (b"\xff\xfe\x00garbage", "application/json"),
    (b"[1, 2, 3]", "application/json"),
    (b"null", "application/json"),
    (b'{"name": "\\ud800"}', "application/json"),
    (b"name: [unclosed", "application/yaml"),
    (b"<xml/>", "application/xml"),
])
@pytest.mark.parametrize("path", ["/api/v1/nodes/", "/api/v1/queues/", "/api/v1/jobs/",
                                  "/api/v1/manifests/import/", "/api/v1/priority-classes/"])
def test_malformed_bodies_are_4xx_envelopes(staff, path, body, content_type):
    response = staff.generic("POST", path, body, content_type=content_type)
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert set(response.json()["error"]) == ENVELOPE_KEYS


@pytest.mark.django_db
def test_a_200_deep_queue_chain_works_and_reads_back(staff):
    parent = None
    for depth in range(200):
        parent = services.queue_create(name=f"level-{depth}", parent=parent)
    assert staff.get("/api/v1/queues/level-199/").json()["parent"] == "level-198"
    tree = staff.get("/api/v1/queues/tree/").json()
    (node,) = [c for c in tree["children"] if c["name"] == "level-0"]  # beside the default queue
    depth = 1
    while node["children"]:
        (node,) = node["children"]
        depth += 1
    assert (depth, node["name"]) == (200, "level-199")
    job = services.job_submit(namespace="ns1", name="deep", queue="level-199",
                              tasks=[{"name": "t0", "request": {"cpu": "1"}}])
    assert job.queue.name == "level-199"


@pytest.mark.django_db
def test_cycles_are_refused_at_any_depth(staff):
    chain = [services.queue_create(name="c0")]
    for i in range(1, 50):
        chain.append(services.queue_create(name=f"c{i}", parent=chain[-1]))
    with pytest.raises(ValidationError) as err:
        services.queue_update(queue=chain[0], parent=chain[-1])
    assert err.value.message_dict == {"parent": ["Queue 'c0' cannot be placed under 'c49': that would make a "
                                                 "cycle."]}
    assert staff.patch("/api/v1/queues/c10/", {"parent": "c10"}, format="json").status_code == 400
    response = staff.patch("/api/v1/queues/c0/", {"parent": "c30"}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["parent"]
    assert Queue.objects.get(name="c0").parent_id is None


def _big_job(n: int, bad_index: int | None = None) -> dict:
    tasks = [{"name": f"big-{i}", "role": "worker", "request": {"cpu": "100m", "memory": "128Mi"}}
             for i in range(n)]
    if bad_index is not None:
        tasks[bad_index]["request"] = {"cpu": "-1"}
    return {"namespace": "ns1", "name": "big", "queue": "leaf", "min_member": n, "tasks": tasks}


@pytest.mark.slow
@pytest.mark.django_db
def test_a_10000_task_job_is_stored_whole_in_reasonable_time(staff):
    services.queue_create(name="leaf")
    started = time.monotonic()
    response = staff.post("/api/v1/jobs/", _big_job(10_000), format="json")
    elapsed = time.monotonic() - started
    assert response.status_code == 201, response.content[:300]
    job = Job.objects.get(name="big")
    assert Task.objects.filter(job=job).count() == 10_000 and job.min_member == 10_000
    assert elapsed < 60  # a generous bound: the point is "not minutes", not a benchmark


@pytest.mark.django_db
def test_a_10000_task_job_with_one_bad_task_is_refused_whole(staff):
    services.queue_create(name="leaf")
    response = staff.post("/api/v1/jobs/", _big_job(10_000, bad_index=9_999), format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["tasks[9999].request"]
    assert (Job.objects.count(), Task.objects.count()) == (0, 0)


def _job_with(**task_extra) -> dict:
    return {"namespace": "ns1", "name": "j", "queue": "leaf", "tasks": [{"name": "t0", **task_extra}]}


# PostgreSQL text/jsonb cannot hold NUL characters and UTF-8 cannot encode lone surrogates: every
# free-form JSON field refuses them with a 400 naming the field instead of failing in the database.
@pytest.mark.parametrize("method,path,body,field", [
    ("post", "/api/v1/queues/", {"name": "q", "annotations": {"a": "\x00"}}, "annotations"),
    ("post", "/api/v1/queues/", {"name": "q", "annotations": {"k\x00": {"deep": ["x\x00"]}}}, "annotations"),
    ("post", "/api/v1/queues/", {"name": "q", "capability": {"cpu\x00": "1"}}, "capability"),
    ("post", "/api/v1/nodes/", {"name": "n", "allocatable": {"cpu": "1"},
                                "taints": [{"key": "k\x00", "effect": "NoSchedule"}]}, "taints"),
    ("post", "/api/v1/jobs/", _job_with(affinity={"nodeAffinity": "\x00"}), "tasks[0]"),
    ("post", "/api/v1/jobs/", _job_with(tolerations=[{"key": "\x00", "operator": "Exists"}]), "tasks[0]"),
    ("post", "/api/v1/jobs/", {**_job_with(role="w"), "min_task_member": {"w\x00": 1}}, "min_task_member"),
    ("post", "/api/v1/queues/", {"name": "q", "annotations": {"a": "\ud800"}}, "annotations"),
    ("post", "/api/v1/jobs/", _job_with(affinity={"\udfff": {}}), "tasks[0]"),
    ("post", "/api/v1/manifests/import/", {"yaml": "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                                   "metadata: {name: q, annotations: {a: \"\\0\"}}\n"},
     "documents[0].metadata.annotations"),
])
def test_unstorable_text_is_refused_with_a_field_error(staff, method, path, body, field):
    services.queue_create(name="leaf")
    # json.dumps escapes lone surrogates ("\ud800"), as a hostile client would send them.
    response = staff.generic(method.upper(), path, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["fields"]
    assert any(key == field or key.startswith((f"{field}.", f"{field}[")) for key in fields), fields


@pytest.mark.django_db
@pytest.mark.parametrize("call,field,prefix", [
    (lambda bad: services.queue_create(name="q", annotations={"a": [bad]}), "annotations.a[0]", ""),
    (lambda bad: services.queue_create(name="q", deserved={f"gpu{bad}": 1}), "deserved",
     "Bad resource name: "),
    (lambda bad: services.node_create(name="n", allocatable={"cpu": "1"},
                                      taints=[{"key": f"k{bad}", "effect": "NoSchedule"}]),
     "taints[0].key", ""),
    (lambda bad: services.node_create(name="n", allocatable={"cpu": "1"}, labels={f"a{bad}": "b"}),
     "labels", ""),
    (lambda bad: services.job_submit(namespace="ns1", name="j", queue="leaf",
                                     tasks=[{"name": "t", "labels": {"a": bad}}]), "tasks[0].labels.a", ""),
])
@pytest.mark.parametrize("bad,message", [("\x00", "null characters are not allowed"),
                                         ("\ud800", "unpaired surrogate U+D800 is not allowed"),
                                         ("\x07", "control character U+0007 is not allowed")])
def test_services_refuse_unstorable_text_for_every_caller(call, field, prefix, bad, message):
    """The path names the element; a bad key is reported on its map (the path stays printable)."""
    services.queue_create(name="leaf")
    with pytest.raises(ValidationError) as err:
        call(bad)
    assert err.value.message_dict == {field: [prefix + message]}

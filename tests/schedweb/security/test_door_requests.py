"""Bounded work per request and the request guard: task and manifest limits, job detail paging,
topology spread constraints through every door, control characters in the request line, and
error messages that always render."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer

from schedweb.api.exceptions import api_exception_handler
from schedweb.core import services
from schedweb.core.models import Job, Task

SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


@pytest.fixture
def staff(make_user, client_for):
    services.queue_create(name="leaf")
    return client_for(make_user("staff", staff=True))


def job(name: str = "j", tasks: int = 1, **task_extra) -> dict:
    return {"namespace": "ns1", "name": name, "queue": "leaf", "min_member": 1,
            "tasks": [{"name": f"{name}-{i}", **task_extra} for i in range(tasks)]}


def vcjob(name: str, replicas: int) -> str:
    return (f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: ns1}}\n"
            f"spec:\n  queue: leaf\n  minAvailable: 1\n  tasks:\n  - name: w\n    replicas: {replicas}\n"
            "    template:\n      spec:\n        topologySpreadConstraints: " + json.dumps(SPREAD) + "\n"
            "        containers: [{name: main, resources: {requests: {cpu: 100m}}}]\n")


def test_tasks_per_job_follow_the_setting(staff, settings):
    settings.MAX_TASKS_PER_JOB = 3
    response = staff.post("/api/v1/jobs/", job(tasks=4), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks": [
        "A job may have at most 3 tasks (MAX_TASKS_PER_JOB), got 4."]}
    assert staff.post("/api/v1/jobs/", job(tasks=3), format="json").status_code == 201
    with pytest.raises(ValidationError) as caught:
        services.job_submit(namespace="ns1", name="svc", queue="leaf",
                            tasks=[{"name": f"s{i}"} for i in range(4)])
    assert caught.value.message_dict == {"tasks": [
        "A job may have at most 3 tasks (MAX_TASKS_PER_JOB), got 4."]}


def test_a_billion_replicas_are_refused_before_any_pod_is_made(staff):
    response = staff.generic("POST", "/api/v1/manifests/import/", vcjob("many", 10**9),
                             content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"documents[0].spec.tasks[0].replicas": [
        "The job would have 1000000000 tasks; at most 10000 (MAX_TASKS_PER_JOB)."]}


def test_jobs_per_manifest_follow_the_setting(staff, settings):
    settings.MAX_JOBS_PER_MANIFEST = 2
    text = "---\n".join(vcjob(f"v{i}", 1) for i in range(3))
    response = staff.generic("POST", "/api/v1/manifests/import/", text, content_type="application/yaml")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"documents": [
        "The manifest has 3 jobs (PodGroups and Jobs); at most 2 (MAX_JOBS_PER_MANIFEST)."]}
    assert Job.objects.count() == 0


def test_job_detail_pages_its_tasks(staff):
    created = staff.post("/api/v1/jobs/", job("big", tasks=250), format="json")
    assert created.status_code == 201
    body = created.json()
    assert (len(body["tasks"]), body["tasks_total"], body["tasks"][0]["name"]) == (100, 250, "big-0")
    nxt = staff.get(body["tasks_next"]).json()
    assert (nxt["count"], [t["name"] for t in nxt["results"]][:2]) == (250, ["big-100", "big-101"])
    everything = staff.get(body["tasks_url"] + "&limit=1000").json()
    assert len(everything["results"]) == 250


def test_topology_spread_constraints_enter_by_every_door_and_export_back(staff):
    response = staff.post("/api/v1/jobs/", job("api", topology_spread_constraints=SPREAD), format="json")
    assert response.status_code == 201
    assert response.json()["tasks"][0]["topology_spread_constraints"] == SPREAD
    imported = staff.generic("POST", "/api/v1/manifests/import/", vcjob("yml", 2),
                             content_type="application/yaml")
    assert imported.status_code == 200, imported.content
    assert {t.topology_spread_constraints == SPREAD for t in Task.objects.all()} == {True}
    exported = staff.get("/api/v1/manifests/export/?kind=Job").content.decode()
    assert exported.count("topologySpreadConstraints:") == 2
    body = job("bad", topology_spread_constraints=[{**SPREAD[0], "maxSkew": 0}])
    bad = staff.post("/api/v1/jobs/", body, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["fields"] == {"tasks[0].topology_spread_constraints[0].maxSkew": [
        "must be between 1 and 9223372036854775807, got 0"]}


@pytest.mark.parametrize(("path", "field", "message"), [
    ("/api/v1/queues/a%07b/", "path", "control character U+0007 is not allowed"),
    ("/api/v1/jobs/?namespace=%1b[31m", "namespace", "control character U+001B is not allowed"),
    ("/api/v1/jobs/?%00=1", "query", "null characters are not allowed"),
    ("/api/v1/nodes/?search=a%0Ab", "search", "control character U+000A is not allowed"),
])
def test_control_characters_in_the_request_line_are_400(staff, path, field, message):
    response = staff.get(path)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["fields"] == {field: [message]}


def test_a_control_character_in_the_idempotency_key_is_400(staff):
    response = staff.post("/api/v1/jobs/", job(), format="json", HTTP_IDEMPOTENCY_KEY="k\x01")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "Idempotency-Key": ["control character U+0001 is not allowed"]}
    assert Job.objects.count() == 0


def test_a_nul_in_a_page_path_is_a_plain_400(staff):
    response = staff.get("/queues/%00/")
    assert (response.status_code, response["Content-Type"]) == (400, "text/plain; charset=utf-8")
    assert response.content == b"Bad request: null characters are not allowed in the URL path.\n"


def test_error_messages_that_echo_lone_surrogates_still_render(rf):
    exc = exceptions.ValidationError({"yaml\ud800": ["unknown plugin '\udfff'"]})
    response = api_exception_handler(exc, {"request": rf.get("/api/v1/")})
    rendered = JSONRenderer().render(response.data)
    assert json.loads(rendered)["error"]["fields"] == {"yaml\ufffd": ["unknown plugin '\ufffd'"]}


@pytest.mark.parametrize("method,path", [("PUT", "/api/v1/scheduler-config/"),
                                         ("POST", "/api/v1/scheduler-config/dry-run/")])
def test_deep_yaml_configs_are_400(staff, method, path):
    deep = "actions: enqueue\ntiers: " + "[" * 3000 + "]" * 3000 + "\n"
    response = staff.generic(method, path, json.dumps({"yaml": deep}), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"yaml": [
        "YAML too large: nested deeper than 64 levels (MAX_YAML_DEPTH) at line 2"]}


def test_yaml_timestamps_stay_text(staff):
    text = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
            "metadata: {name: dated, annotations: {since: 2026-01-01}}\n")
    response = staff.generic("POST", "/api/v1/manifests/import/", text, content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert staff.get("/api/v1/queues/dated/").json()["annotations"] == {"since": "2026-01-01"}

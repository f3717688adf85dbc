"""Kubernetes validation at the door (issues 29 and 33): names, pod names, quantities and taints
are refused as Kubernetes refuses them by the API, the admin forms and the manifest import alike
(one validator, scheduler_core.shapes); rows stored before keep loading."""

from __future__ import annotations

import pytest

from schedweb.core.models import Job, Node, PriorityClass, Queue

from .conftest import make_node, make_queue


@pytest.fixture
def staff(make_user, client_for):
    make_queue("q")
    make_node("n1", cpu="64", memory="256Gi")
    return client_for(make_user("boss", staff=True))


def job(name: str = "j", task: str = "w", **extra) -> dict:
    entry = {"name": task, "request": {"cpu": "1"}, **extra}
    return {"namespace": "ns", "name": name, "queue": "q", "min_member": 1, "tasks": [entry]}


BAD_NAMES = ["Upper_Case", "a..b", "Node_1", "name\n"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize(("url", "body", "field"), [
    ("/api/v1/jobs/", lambda n: job(n), "name"),
    ("/api/v1/jobs/", lambda n: job("j", task=n), "tasks[0].name"),
    ("/api/v1/queues/", lambda n: {"name": n}, "name"),
    ("/api/v1/nodes/", lambda n: {"name": n, "allocatable": {"cpu": "1"}}, "name"),
    ("/api/v1/priority-classes/", lambda n: {"name": n, "value": 10}, "name"),
])
def test_names_kubernetes_refuses_are_400_naming_the_field(staff, name, url, body, field):
    response = staff.post(url, body(name), format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == [field]
    assert not Job.objects.filter(name=name.strip()).exists()
    assert not Queue.objects.filter(name=name.strip()).exists()


def test_a_replicated_entrys_pod_names_fit_63_characters(staff):
    long_job = "j" * 59  # <job>-w-<index>: 63 characters for indexes below 10, 64 from 10 on
    assert staff.post("/api/v1/jobs/", job(long_job, replicas=10), format="json").status_code == 201
    response = staff.post("/api/v1/jobs/", job(long_job[:-1] + "k", replicas=11), format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks[0].name": [
        f"Its replicas would be named {long_job[:-1]}k-w-<index>, up to 64 characters; a pod name has at "
        "most 63."]}


@pytest.mark.parametrize(("request_", "stored"), [
    ({"cpu": "0.0001"}, {"cpu": 1.0}), ({"cpu": "250u", "memory": "0.5"}, {"cpu": 1.0, "memory": 1.0}),
    ({"cpu": "1500n"}, {"cpu": 1.0}), ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": 1000.0}),
])
def test_quantities_are_rounded_up_as_kubernetes_does(staff, request_, stored):
    response = staff.post("/api/v1/jobs/", {**job(), "tasks": [{"name": "w", "request": request_}]},
                          format="json")
    assert response.status_code == 201, response.content
    assert Job.objects.get(name="j").tasks.get().request == stored


@pytest.mark.parametrize(("request_", "message"), [
    ({"nvidia.com/gpu": "500m"},
     "nvidia.com/gpu: extended resource quantities are whole numbers, got '500m'"),
    ({"cpu": "9223372036854775807m"}, "cpu: quantity 9223372036854775.807 is out of range: above "
                                      "9223372036854775807 milli-units"),
])
def test_quantities_kubernetes_refuses(staff, request_, message):
    response = staff.post("/api/v1/jobs/", {**job(), "tasks": [{"name": "w", "request": request_}]},
                          format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"tasks[0].request": [message]}


def test_node_taints_unique_by_key_and_effect_and_time_added_kept(staff):
    taints = [{"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoSchedule", "value": "x"}]
    response = staff.post("/api/v1/nodes/", {"name": "n2", "allocatable": {"cpu": "1"}, "taints": taints},
                          format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["taints[1]"]
    added = [{"key": "gpu", "effect": "NoExecute", "timeAdded": "2024-05-01T10:00:00Z"}]
    response = staff.post("/api/v1/nodes/", {"name": "n2", "allocatable": {"cpu": "1"}, "taints": added},
                          format="json")
    assert response.status_code == 201, response.content
    assert Node.objects.get(name="n2").taints == [{**added[0], "value": ""}]
    fractional = staff.post("/api/v1/nodes/", {"name": "n3", "allocatable": {"nvidia.com/gpu": "0.5"}},
                            format="json")
    assert fractional.status_code == 400


def test_the_manifest_import_refuses_them_too(staff):
    text = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: m, namespace: ns}
spec:
  queue: q
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: 500m}}}]
"""
    response = staff.post("/api/v1/manifests/import/", text, content_type="application/yaml")
    assert response.status_code == 400
    assert "whole numbers" in str(response.json()["error"]["fields"])


def test_rows_stored_before_keep_loading_and_their_names_block_case_twins(staff):
    legacy = Queue.objects.create(name="Legacy_Q")  # stored before names were checked
    PriorityClass.objects.create(name="High", value=5)
    assert staff.get("/api/v1/queues/Legacy_Q/").status_code == 200
    assert staff.patch("/api/v1/queues/Legacy_Q/", {"name": "Legacy_Q", "weight": 3},
                       format="json").status_code == 200
    legacy.refresh_from_db()
    assert legacy.weight == 3
    twin = staff.post("/api/v1/priority-classes/", {"name": "high", "value": 6}, format="json")
    assert twin.status_code == 400
    assert twin.json()["error"]["fields"] == {"name": [
        "A priority class named 'high' already exists ('High': names may not differ only by case)."]}


def test_bulk_cancel_by_prefix_is_case_sensitive(staff):
    queue = Queue.objects.get(name="q")
    legacy = Job.objects.create(namespace="ns", name="Bad_Name", queue=queue)
    assert staff.post("/api/v1/jobs/", job("bad-one"), format="json").status_code == 201
    response = staff.post("/api/v1/jobs/cancel/", {"namespace": "ns", "name_prefix": "b"}, format="json")
    assert response.status_code == 200
    assert [r["uid"] for r in response.json()["results"]] == ["ns/bad-one"]
    legacy.refresh_from_db()
    assert legacy.phase == "Pending"


def test_the_admin_form_refuses_a_name_with_a_newline(make_user):
    from django.test import Client

    admin = make_user("root", staff=True)
    admin.is_superuser = True
    admin.save()
    browser = Client()
    browser.force_login(admin)
    response = browser.post("/admin/core/priorityclass/add/", {
        "name": "gold\n", "value": "10", "preemption_policy": "PreemptLowerPriority", "description": ""})
    assert response.status_code == 200  # the form again, with the error
    assert not PriorityClass.objects.exists()

"""Nodes (CRUD by name, heartbeat) and task status reports from node agents."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from schedweb.core.models import Task

from .conftest import make_job, make_node, make_queue

GI = 2**30


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def test_node_crud_by_name(staff):
    created = staff.post("/api/v1/nodes/", {
        "name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}, "labels": {"zone": "a"},
        "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["allocatable"] == {"cpu": 4, "memory": 8 * GI, "pods": 110}
    assert body["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    cordoned = staff.patch("/api/v1/nodes/n1/", {"unschedulable": True}, format="json")
    assert cordoned.status_code == 200 and cordoned.json()["unschedulable"] is True
    assert staff.get("/api/v1/nodes/?unschedulable=true").json()["count"] == 1
    assert staff.delete("/api/v1/nodes/n1/").status_code == 204
    assert staff.get("/api/v1/nodes/n1/").status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "n2", "allocatable": {"cpu": "-1"}}, "allocatable"),
    ({"name": "n2", "allocatable": {"cpu": "4"}, "taints": [{"key": "k", "effect": "Sometimes"}]},
     "taints[0].effect"),
    ({"name": "n1", "allocatable": {"cpu": "4"}}, "name"),      # duplicate
])
def test_node_validation(staff, body, field):
    make_node("n1")
    response = staff.post("/api/v1/nodes/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


def test_heartbeat_by_agent_permission(make_user, client_for):
    make_node("n1")
    agent = make_user("agent")
    agent.user_permissions.add(Permission.objects.get(codename="change_node", content_type__app_label="core"))
    beat = {"cpu": 35.5, "memory": 50}
    response = client_for(agent).post("/api/v1/nodes/n1/heartbeat/", beat, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["usage_cpu"], response.json()["usage_memory"]) == (35.5, 50.0)
    assert response.json()["usage_updated"] is not None
    bad = client_for(agent).post("/api/v1/nodes/n1/heartbeat/", {"cpu": 135, "memory": 5}, format="json")
    assert bad.status_code == 400 and "cpu" in bad.json()["error"]["fields"]
    cordon = client_for(agent).patch("/api/v1/nodes/n1/", {"unschedulable": True}, format="json")
    assert cordon.status_code == 403
    assert client_for(make_user("nobody")).post("/api/v1/nodes/n1/heartbeat/", {"cpu": 1, "memory": 1},
                                                format="json").status_code == 403


def test_task_status_transitions(staff):
    node = make_node("n1")
    job = make_job(make_queue("q"), "j", tasks=1)
    task = Task.objects.get(job=job)
    illegal = staff.post(f"/api/v1/tasks/{task.id}/status/", {"status": "Succeeded"}, format="json")
    assert illegal.status_code == 400 and "status" in illegal.json()["error"]["fields"]
    Task.objects.filter(pk=task.pk).update(status="Bound", node=node)
    running = staff.post(f"/api/v1/tasks/{task.id}/status/", {"status": "Running"}, format="json")
    assert running.status_code == 200 and running.json()["status"] == "Running"
    assert running.json()["node"] == "n1"
    done = staff.post(f"/api/v1/tasks/{task.id}/status/", {"status": "Succeeded"}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "Succeeded"
    unknown = staff.post(f"/api/v1/tasks/{task.id}/status/", {"status": "Exploded"}, format="json")
    assert unknown.status_code == 400 and "status" in unknown.json()["error"]["fields"]
    listed = staff.get("/api/v1/tasks/?node=n1&status=Succeeded").json()
    assert [t["uid"] for t in listed["results"]] == ["ns1/j/j-0"]

"""Every 201 carries `Location`: the created object's detail path, which answers 200."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient


@pytest.fixture
def staff(db) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("boss", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize(("path", "body", "where"), [
    ("/api/v1/queues/", {"name": "research"}, "/api/v1/queues/research/"),
    ("/api/v1/nodes/", {"name": "n-1", "allocatable": {"cpu": "4", "memory": "8Gi"}}, "/api/v1/nodes/n-1/"),
    ("/api/v1/priority-classes/", {"name": "high", "value": 1000}, "/api/v1/priority-classes/high/"),
    ("/api/v1/namespace-quotas/", {"namespace": "ml", "hard": {"cpu": "8"}}, "/api/v1/namespace-quotas/ml/"),
])
def test_a_created_object_is_located(staff, path, body, where):
    response = staff.post(path, body, format="json")
    assert (response.status_code, response["Location"]) == (201, where)
    assert staff.get(response["Location"]).status_code == 200


def test_a_job_and_a_token_are_located(staff):
    staff.post("/api/v1/queues/", {"name": "q"}, format="json")
    body = {"namespace": "ml", "name": "a", "queue": "q", "tasks": [{"name": "t"}]}
    job = staff.post("/api/v1/jobs/", body, format="json")
    assert (job.status_code, job["Location"]) == (201, f"/api/v1/jobs/{job.json()['id']}/")
    assert staff.get(job["Location"]).json()["name"] == "a"
    token = staff.post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert (token.status_code, token["Location"]) == (201, f"/api/v1/tokens/{token.json()['id']}/")


def test_the_tree_names_the_cycle_its_figures_come_from(staff):
    from schedweb.scheduling.cycle import cycle_run

    staff.post("/api/v1/queues/", {"name": "q"}, format="json")
    assert staff.get("/api/v1/queues/tree/").json()["cycle"] is None  # no cycle yet
    run = cycle_run()
    tree = staff.get("/api/v1/queues/tree/").json()
    assert tree["cycle"] == {"id": run.id, "started": run.started.isoformat().replace("+00:00", "Z")}

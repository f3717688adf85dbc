"""GET /api/v1/audit/: who sees which entries, what the API records about the request."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from schedweb.api.services import token_create
from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.audit_selectors import entries_for


def keys(response) -> list[tuple[str, str, str]]:
    assert response.status_code == 200, response.content
    return [(e["action"], e["object_type"], e["object_key"]) for e in response.json()["results"]]


def test_api_change_records_user_token_request_id_and_ip(teams):
    users, _ = teams
    _, key = token_create(user=users["staff"], name="ci-bot")
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.patch("/api/v1/queues/b1/", {"weight": 5}, format="json", HTTP_X_REQUEST_ID="req-42")
    assert response.status_code == 200 and response["X-Request-ID"] == "req-42"
    entry = AuditEntry.objects.get(action="update")
    assert (entry.actor_name, entry.token_name, entry.request_id, entry.ip) == ("staff", "ci-bot", "req-42",
                                                                                "127.0.0.1")
    assert entry.diff == {"weight": {"before": 1, "after": 5}}


def test_unsafe_request_id_is_replaced(teams, client_for):
    users, _ = teams
    response = client_for(users["staff"]).post("/api/v1/queues/b1/close/", {}, format="json",
                                               HTTP_X_REQUEST_ID="bad id\nwith newline")
    generated = response["X-Request-ID"]
    assert len(generated) == 32 and AuditEntry.objects.get(action="set_state").request_id == generated


def test_staff_see_all_queue_admins_their_subtree_others_nothing(teams, client_for):
    users, queues = teams
    staff = client_for(users["staff"])
    assert staff.patch("/api/v1/queues/a1/", {"weight": 2}, format="json").status_code == 200
    assert staff.patch("/api/v1/queues/b1/", {"weight": 2}, format="json").status_code == 200
    assert staff.post("/api/v1/nodes/", {"name": "n1", "allocatable": {"cpu": "4"}},
                      format="json").status_code == 201
    assert client_for(users["admin_a"]).delete("/api/v1/queues/a2/").status_code == 204

    assert keys(staff.get("/api/v1/audit/?object_type=queue&action=update")) == [
        ("update", "queue", "b1"), ("update", "queue", "a1")]
    admin_view = keys(client_for(users["admin_a"]).get("/api/v1/audit/?action=update"))
    admin = client_for(users["admin_a"])
    assert keys(admin.get("/api/v1/audit/?action=delete")) == [("delete", "queue", "a2")]
    assert admin_view == [("update", "queue", "a1")]
    all_for_admin = keys(client_for(users["admin_a"]).get("/api/v1/audit/"))
    assert all(t != "node" for _, t, _ in all_for_admin)
    assert ("create", "queue", "team-a") in all_for_admin
    assert ("create", "queue", "team-b") not in all_for_admin
    assert keys(client_for(users["other"]).get("/api/v1/audit/")) == []
    assert keys(client_for(users["submitter_a"]).get("/api/v1/audit/")) == []
    assert APIClient().get("/api/v1/audit/").status_code == 401


def test_filters_by_queue_actor_and_detail(teams, client_for):
    users, queues = teams
    client_for(users["admin_a"]).patch("/api/v1/queues/a1/", {"priority": 7}, format="json")
    staff = client_for(users["staff"])
    assert keys(staff.get("/api/v1/audit/?actor=admin_a")) == [("update", "queue", "a1")]
    by_queue = keys(staff.get("/api/v1/audit/?queue=team-a"))
    assert by_queue == [("update", "queue", "a1"), ("create", "queue", "a2"), ("create", "queue", "a1"),
                        ("create", "queue", "team-a")]
    entry_id = AuditEntry.objects.get(actor_name="admin_a").pk
    detail = staff.get(f"/api/v1/audit/{entry_id}/").json()
    assert detail["actor"] == "admin_a" and detail["diff"] == {"priority": {"before": 0, "after": 7}}
    assert client_for(users["other"]).get(f"/api/v1/audit/{entry_id}/").status_code == 404
    assert staff.get("/api/v1/audit/?object_type=bogus").status_code == 400


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_audit_log_is_read_only(teams, client_for, method):
    users, _ = teams
    entry_id = AuditEntry.objects.first().pk
    path = "/api/v1/audit/" if method == "post" else f"/api/v1/audit/{entry_id}/"
    assert getattr(client_for(users["staff"]), method)(path, {}, format="json").status_code == 405


def test_job_cancel_through_api_visible_to_queue_admin(teams, client_for):
    users, queues = teams
    job = services.job_submit(namespace="ns1", name="j1", queue=queues["a1"],
                              submitted_by=users["submitter_a"],
                              tasks=[{"name": "t0", "request": {"cpu": "1"}}])
    assert client_for(users["submitter_a"]).delete(f"/api/v1/jobs/{job.pk}/").status_code == 204
    assert keys(client_for(users["admin_a"]).get("/api/v1/audit/?object_type=job")) == [
        ("cancel", "job", "ns1/j1")]
    assert [e.actor_name for e in entries_for(users["admin_a"], object_type="job")] == ["submitter_a"]


def test_admin_site_change_is_attributed_to_the_signed_in_user(teams):
    from django.contrib.auth import get_user_model
    from django.test import Client

    get_user_model().objects.create_superuser("root-user", password="pw")
    client = Client()
    assert client.login(username="root-user", password="pw")
    response = client.post("/admin/core/priorityclass/add/", {
        "name": "gold", "value": "1000", "preemption_policy": "PreemptLowerPriority", "description": ""})
    assert response.status_code == 302, response.content[:500]
    entry = AuditEntry.objects.get(object_type="priority_class")
    assert (entry.actor_name, entry.action, entry.object_key) == ("root-user", "create", "gold")


@pytest.mark.parametrize("query,expected", [
    ("since=2000-01-01T00:00:00%2B17:57", 200),      # beyond PostgreSQL's offsets: compared in UTC
    ("until=9999-12-31T23:00:00-05:00", 400),         # not representable in UTC
    ("since=not-a-time", 400),
])
def test_time_filters_never_fail_with_500(teams, client_for, query, expected):
    users, _ = teams
    response = client_for(users["staff"]).get(f"/api/v1/audit/?{query}")
    assert response.status_code == expected
    if expected == 400:
        assert response.json()["error"]["code"] == "invalid"

"""The authorization matrix: (role) x (read, submit, manage, cancel) x (team-a, team-b), one table."""

from __future__ import annotations

import pytest

from .conftest import job_body, make_job

# role, action, team, expected status
MATRIX = [
    # every signed-in user reads everything; anonymous gets 401
    ("admin_a", "read", "a", 200), ("admin_a", "read", "b", 200),
    ("submitter_a", "read", "a", 200), ("submitter_a", "read", "b", 200),
    ("other", "read", "a", 200), ("other", "read", "b", 200),
    ("staff", "read", "a", 200), ("staff", "read", "b", 200),
    ("anonymous", "read", "a", 401), ("anonymous", "read", "b", 401),
    # submitting into a leaf: admins and submitters of an ancestor, and staff
    ("admin_a", "submit", "a", 201), ("admin_a", "submit", "b", 403),
    ("submitter_a", "submit", "a", 201), ("submitter_a", "submit", "b", 403),
    ("other", "submit", "a", 403), ("other", "submit", "b", 403),
    ("staff", "submit", "a", 201), ("staff", "submit", "b", 201),
    ("anonymous", "submit", "a", 401), ("anonymous", "submit", "b", 401),
    # managing the queue (PATCH weight): admins (inherited) and staff
    ("admin_a", "manage", "a", 200), ("admin_a", "manage", "b", 403),
    ("submitter_a", "manage", "a", 403), ("submitter_a", "manage", "b", 403),
    ("other", "manage", "a", 403), ("other", "manage", "b", 403),
    ("staff", "manage", "a", 200), ("staff", "manage", "b", 200),
    ("anonymous", "manage", "a", 401), ("anonymous", "manage", "b", 401),
    # cancelling somebody else's job: admins of the queue's ancestors and staff
    ("admin_a", "cancel", "a", 200), ("admin_a", "cancel", "b", 403),
    ("submitter_a", "cancel", "a", 403), ("submitter_a", "cancel", "b", 403),
    ("other", "cancel", "a", 403), ("other", "cancel", "b", 403),
    ("staff", "cancel", "a", 200), ("staff", "cancel", "b", 200),
    ("anonymous", "cancel", "a", 401), ("anonymous", "cancel", "b", 401),
]


@pytest.mark.parametrize(("role", "action", "team", "expected"), MATRIX,
                         ids=[f"{r}-{a}-team_{t}" for r, a, t, _ in MATRIX])
def test_permission_matrix(teams, client_for, role, action, team, expected):
    users, queues = teams
    leaf, top = ("a1", "team-a") if team == "a" else ("b1", "team-b")
    client = client_for(None if role == "anonymous" else users[role])
    if action == "read":
        response = client.get(f"/api/v1/queues/{leaf}/")
    elif action == "submit":
        response = client.post("/api/v1/jobs/", job_body(leaf), format="json")
    elif action == "manage":
        # A capability: what the queue takes from its siblings (weight, deserved...) needs the
        # parent's admin (test_queue_share), the root's (staff) for these top-level queues.
        response = client.patch(f"/api/v1/queues/{top}/", {"capability": {"cpu": "64"}}, format="json")
    else:
        job = make_job(queues[leaf], "victim", user=users["staff"])
        response = client.post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == expected, response.content
    if expected >= 400:
        assert response.json()["error"]["code"] in ("not_authenticated", "permission_denied")


def test_submitter_cancels_own_job_only(teams, client_for):
    users, queues = teams
    own = make_job(queues["a1"], "own", user=users["submitter_a"])
    theirs = make_job(queues["a1"], "theirs", user=users["admin_a"])
    client = client_for(users["submitter_a"])
    assert client.post(f"/api/v1/jobs/{own.id}/cancel/").status_code == 200
    assert client.post(f"/api/v1/jobs/{theirs.id}/cancel/").status_code == 403


def test_group_acl_is_inherited(teams, client_for, make_user):
    users, queues = teams
    from django.contrib.auth.models import Group

    from schedweb.core import services
    ml = Group.objects.create(name="ml")
    services.queue_update(queue=queues["team-b"], admin_groups=[ml])
    member = make_user("member", groups=("ml",))
    response = client_for(member).patch("/api/v1/queues/b1/", {"weight": 2}, format="json")
    assert response.status_code == 200
    assert response.json()["weight"] == 2


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/nodes/", {"name": "n9", "allocatable": {"cpu": "4"}}),
    ("/api/v1/priority-classes/", {"name": "high", "value": 1000}),
    ("/api/v1/namespace-quotas/", {"namespace": "ns1", "hard": {"cpu": "10"}}),
])
def test_only_staff_manage_cluster_objects(teams, client_for, path, body):
    users, _ = teams
    assert client_for(users["admin_a"]).post(path, body, format="json").status_code == 403
    assert client_for(users["staff"]).post(path, body, format="json").status_code == 201


def test_creating_top_level_queue_needs_staff(teams, client_for):
    users, _ = teams
    body = {"name": "team-c"}
    assert client_for(users["admin_a"]).post("/api/v1/queues/", body, format="json").status_code == 403
    child = client_for(users["admin_a"]).post("/api/v1/queues/", {"name": "a3", "parent": "team-a"},
                                              format="json")
    assert child.status_code == 201
    assert child.json()["parent"] == "team-a"


@pytest.mark.parametrize(("role", "admin_queues", "submit_queues"), [
    ("admin_a", ["a1", "a2", "team-a"], ["a1", "a2"]),
    ("submitter_a", [], ["a1", "a2"]),
    ("other", [], []),
    ("staff", ["a1", "a2", "b1", "default", "team-a", "team-b"], ["a1", "a2", "b1", "default"]),
])
def test_me_lists_effective_queue_rights(teams, client_for, role, admin_queues, submit_queues):
    users, _ = teams
    body = client_for(users[role]).get("/api/v1/me/").json()
    assert body["username"] == role
    assert (body["admin_queues"], body["submit_queues"]) == (admin_queues, submit_queues)

"""The API's permission matrix holds in the dashboard too: only admins of a queue (or an
ancestor) and staff may edit, open or close it; others get 403 and nothing changes; sign-in is
required for every page. Changes made in the UI are audited under the signed-in user."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from schedweb.audit.models import AuditEntry
from schedweb.core.models import Queue

# A capability: what a queue's own admin may set (weight, priority, deserved and guarantee take from
# the siblings and need the parent's admin: tests/schedweb/security/test_queue_governance.py).
EDIT_CAPABILITY = {"cpu": 64000.0}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, action: str, queue: str):
    if action == "edit":
        q = Queue.objects.get(name=queue)
        body = {"weight": str(q.weight), "priority": str(q.priority),
                "reclaimable": "on" if q.reclaimable else "", "capability": '{"cpu": "64"}',
                "deserved": "", "guarantee": "", "version": str(q.version)}
        return client.post(reverse("dashboard:queue-edit", args=[queue]), body)
    return client.post(reverse("dashboard:queue-state", args=[queue]), {"state": "close"})


@pytest.mark.parametrize("role,queue,allowed", [
    ("staff", "b1", True),
    ("admin_a", "a1", True),          # inherited from team-a
    ("admin_a", "team-a", True),
    ("admin_a", "b1", False),
    ("submitter_a", "a1", False),     # submitters submit jobs, they do not manage queues
    ("other", "a1", False),
])
@pytest.mark.parametrize("action", ["edit", "state"])
def test_queue_changes_follow_the_api_matrix(teams, role, queue, allowed, action):
    users, _ = teams
    before = Queue.objects.values("capability", "state").get(name=queue)
    response = post(browser(users[role]), action, queue)
    after = Queue.objects.values("capability", "state").get(name=queue)
    if allowed:
        assert response.status_code == 302
        assert after == ({"capability": EDIT_CAPABILITY, "state": before["state"]} if action == "edit"
                         else {"capability": before["capability"], "state": "Closed"})
        entry = AuditEntry.objects.latest("id")
        assert (entry.actor_name, entry.object_key) == (users[role].username, queue)
    else:
        assert response.status_code == 403
        assert after == before
        assert not AuditEntry.objects.filter(action__in=("update", "set_state")).exists()


@pytest.mark.parametrize("role,shows_form", [("staff", True), ("admin_a", True), ("submitter_a", False),
                                             ("other", False)])
def test_edit_form_is_shown_only_to_those_who_may_use_it(teams, role, shows_form):
    users, _ = teams
    response = browser(users[role]).get(reverse("dashboard:queue", args=["a1"]))
    assert response.status_code == 200
    assert (b'id="queue-edit-form"' in response.content) is shows_form


@pytest.mark.parametrize("name,args", [("overview", []), ("queue-tree", []), ("queue", ["a1"]),
                                       ("pending", []), ("nodes", []), ("mine", [])])
def test_pages_require_sign_in(teams, name, args):
    response = Client().get(reverse(f"dashboard:{name}", args=args))
    assert response.status_code == 302 and response["Location"].startswith(reverse("dashboard:login"))


@pytest.mark.parametrize("action", ["edit", "state"])
def test_anonymous_posts_change_nothing(teams, action):
    response = post(Client(), action, "a1")
    assert response.status_code == 302 and response["Location"].startswith(reverse("dashboard:login"))
    assert Queue.objects.get(name="a1").weight == 1

"""Every page needs a signed-in user; write controls and writes are for queue admins only; CSRF."""

from __future__ import annotations

import pytest
from django.test import Client

from schedweb.core.models import Queue

PAGES = ["/", "/queues/", "/queues/vision/", "/queues/vision/chart.json", "/jobs/pending/",
         "/jobs/nlp/gpt-giant/", "/nodes/", "/mine/"]


@pytest.mark.parametrize("url", PAGES)
def test_pages_redirect_anonymous_users_to_sign_in(demo, client_as, url):
    response = client_as(None).get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize("url", PAGES)
def test_pages_render_for_any_signed_in_user(cycled, client_as, url):
    assert client_as(cycled["viewer"]).get(url).status_code == 200


@pytest.mark.parametrize("url", ["/queues/vision/edit/", "/queues/vision/state/"])
def test_anonymous_posts_are_redirected_and_change_nothing(demo, client_as, url):
    response = client_as(None).post(url, {"weight": 7, "state": "close"})
    assert response.status_code == 302
    vision = Queue.objects.get(name="vision")
    assert (vision.weight, vision.state) == (1, "Open")


def test_sign_in_and_sign_out(users):
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="csrfmiddlewaretoken"' in page.content
    bad = client.post("/accounts/login/", {"username": "viewer", "password": "wrong"})
    assert bad.status_code == 200 and b"did not match" in bad.content
    response = client.post("/accounts/login/", {"username": "viewer", "password": "pw"})
    assert (response.status_code, response["Location"]) == (302, "/")
    home = client.get("/")
    assert b"Sign out" in home.content and b"viewer" in home.content
    assert client.get("/accounts/logout/").status_code == 405  # sign out is a POST (CSRF-protected)
    out = client.post("/accounts/logout/")
    assert (out.status_code, out["Location"]) == (302, "/accounts/login/")
    assert client.get("/").status_code == 302


@pytest.mark.parametrize(("user", "queue", "can_admin"), [
    ("viewer", "vision", False),
    ("submitter", "vision", False),   # submitting is not administering
    ("lead", "vision", True),         # inherited from research
    ("lead", "research", True),
    ("lead", "production", False),
    ("staff", "production", True),
])
def test_write_controls_only_for_queue_admins(demo, client_as, user, queue, can_admin):
    html = client_as(demo[user]).get(f"/queues/{queue}/").content.decode()
    assert ('id="queue-edit-form"' in html) is can_admin
    assert ('id="close-queue"' in html) is can_admin
    assert (f'action="/queues/{queue}/state/"' in html) is can_admin


@pytest.mark.parametrize("user", ["viewer", "submitter"])
def test_non_admin_writes_are_forbidden(demo, client_as, user):
    client = client_as(demo[user])
    assert client.post("/queues/vision/edit/", {"weight": 7, "priority": 0}).status_code == 403
    assert client.post("/queues/vision/state/", {"state": "close"}).status_code == 403
    vision = Queue.objects.get(name="vision")
    assert (vision.weight, vision.state) == (1, "Open")


def test_forms_carry_csrf_and_posts_without_token_are_rejected(demo):
    client = Client(enforce_csrf_checks=True)
    client.force_login(demo["lead"])
    html = client.get("/queues/vision/").content.decode()
    assert html.count('name="csrfmiddlewaretoken"') == 3  # edit form, close button, sign out
    assert client.post("/queues/vision/edit/", {"weight": 7, "priority": 0}).status_code == 403
    assert Queue.objects.get(name="vision").weight == 1


@pytest.mark.parametrize("url", ["/queues/nope/", "/queues/nope/chart.json", "/jobs/nlp/nope/"])
def test_unknown_objects_are_404(demo, client_as, url):
    assert client_as(demo["viewer"]).get(url).status_code == 404


def test_unknown_queue_writes_are_404(demo, client_as):
    assert client_as(demo["staff"]).post("/queues/nope/edit/", {"weight": 2}).status_code == 404

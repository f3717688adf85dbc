"""Authentication: 401 for anonymous, session login, API tokens (hashed, shown once, rotate, revoke)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from schedweb.api.models import ApiToken
from schedweb.api.services import token_create


@pytest.mark.parametrize("path", ["/api/v1/queues/", "/api/v1/jobs/", "/api/v1/nodes/", "/api/v1/tokens/",
                                  "/api/v1/scheduler-config/", "/api/schema/",
                                  "/api/docs/", "/api/v1/me/", "/api/v1/"])
def test_anonymous_gets_401_envelope(db, path):
    response = APIClient().get(path)
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "not_authenticated",
                                         "message": "Authentication credentials were not provided.",
                                         "fields": {}}}
    assert response["WWW-Authenticate"] == 'Token realm="api"'


def test_session_login_reads(make_user):
    make_user("alice")
    client = APIClient()
    assert client.login(username="alice", password="pw")
    assert client.get("/api/v1/queues/").status_code == 200


def test_token_created_once_hashed_and_usable(make_user, client_for):
    alice = make_user("alice")
    response = client_for(alice).post("/api/v1/tokens/", {"name": "portal"}, format="json")
    assert response.status_code == 201
    key = response.json()["key"]
    stored = ApiToken.objects.get()
    assert stored.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in (stored.key_hash, stored.prefix) and key.startswith(stored.prefix)
    listed = client_for(alice).get("/api/v1/tokens/").json()
    assert [t["name"] for t in listed] == ["portal"] and "key" not in listed[0]
    for scheme in ("Token", "Bearer"):
        assert APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"{scheme} {key}").status_code == 200
    assert ApiToken.objects.get().last_used is not None


def test_rotate_replaces_key_and_revoke_disables(make_user, client_for):
    alice = make_user("alice")
    token, old_key = token_create(user=alice, name="ci")
    rotated = client_for(alice).post(f"/api/v1/tokens/{token.id}/rotate/")
    assert rotated.status_code == 200
    new_key = rotated.json()["key"]
    assert new_key != old_key
    assert APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {old_key}").status_code == 401
    assert APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {new_key}").status_code == 200
    assert client_for(alice).delete(f"/api/v1/tokens/{token.id}/").status_code == 204
    response = APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {new_key}")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_expired_token_and_other_users_tokens(make_user, client_for):
    alice, bob = make_user("alice"), make_user("bob")
    token, key = token_create(user=alice, name="short", expires=timezone.now() + timedelta(hours=1))
    ApiToken.objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert client_for(bob).post(f"/api/v1/tokens/{token.id}/rotate/").status_code == 404


def test_duplicate_active_token_name_is_400(make_user, client_for):
    alice = make_user("alice")
    client = client_for(alice)
    assert client.post("/api/v1/tokens/", {"name": "x"}, format="json").status_code == 201
    response = client.post("/api/v1/tokens/", {"name": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"name": ["You already have an active token named 'x'."]}

"""Authentication: 401 for anonymous, session login, API tokens (hashed, shown once, rotate, revoke),
bad tokens throttled per address."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
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
    listed = client_for(alice).get("/api/v1/tokens/").json()["results"]  # a page, as every list
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


@pytest.fixture
def bad_token_rate(monkeypatch):
    # DRF copies the rates into the throttle classes at import; patch them as DRF's own tests do.
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES",
                        {"user": "1000/minute", "anon": "1000/minute", "bad_token": "3/minute"})
    cache.clear()
    yield
    cache.clear()


def _get(key: str, ip: str = "10.1.0.1"):
    return APIClient(REMOTE_ADDR=ip).get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {key}")


def test_bad_tokens_are_throttled_per_address(make_user, bad_token_rate):
    _, key = token_create(user=make_user("alice"), name="agent")
    # Unknown key, malformed header, revoked-looking key: each refusal counts.
    assert _get("swt_unknown").status_code == 401
    assert APIClient(REMOTE_ADDR="10.1.0.1").get(
        "/api/v1/queues/", HTTP_AUTHORIZATION="Token a b").status_code == 401
    assert _get("swt_other").status_code == 401
    refused = _get("swt_unknown")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"]["code"] == "throttled"
    assert refused.json()["error"]["message"].startswith("Too many requests with an invalid token.")
    # A valid token from the same address is unaffected and not counted; other addresses are not limited.
    assert [_get(key).status_code for _ in range(5)] == [200] * 5
    assert _get("swt_unknown", ip="10.1.0.2").status_code == 401


def test_throttle_reset_forgets_an_addresss_bad_tokens(db, bad_token_rate):
    for _ in range(3):
        _get("swt_unknown")
    assert _get("swt_unknown").status_code == 429
    call_command("throttle_reset", ip=["10.1.0.1"])
    assert _get("swt_unknown").status_code == 401


def test_anonymous_requests_are_not_counted_as_bad_tokens(db, bad_token_rate):
    assert [APIClient(REMOTE_ADDR="10.1.0.1").get("/api/v1/queues/").status_code
            for _ in range(5)] == [401] * 5
    assert _get("swt_unknown").status_code == 401

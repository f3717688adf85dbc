"""The API tokens page (schedweb.api.pages, beside the dashboard pages it links to): create (name,
lifetime; the key shown once, stored as sha256), list, revoke; the keys it makes work against the
API and stop working once revoked."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from schedweb.api.models import ApiToken
from schedweb.api.services import token_create


def _create(client: Client, name: str = "portal", expires: str = "30"):
    return client.post("/tokens/", {"name": name, "expires": expires})


def _api_status(key: str) -> int:
    return APIClient().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_create_shows_the_key_once_and_stores_its_hash(users, client_as):
    client = client_as(users["viewer"])
    before = timezone.now()
    response = _create(client)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    key = re.search(r'<pre class="key" id="new-key">(swt_[\w-]+)</pre>', html).group(1)
    token = ApiToken.objects.get(user=users["viewer"])
    assert (token.name, token.key_hash) == ("portal", hashlib.sha256(key.encode()).hexdigest())
    assert key.startswith(token.prefix) and key not in (token.key_hash, token.prefix)
    assert before + timedelta(days=30) <= token.expires <= timezone.now() + timedelta(days=30)
    assert f'curl -H "Authorization: Token {key}" http://testserver/api/v1/queues/tree/' in html
    assert _api_status(key) == 200
    # Listed afterwards without its key.
    again = client.get("/tokens/").content.decode()
    assert key not in again and 'id="new-token"' not in again
    row = re.search(r'<tr data-token="portal" data-status="active">.*?</tr>', again, re.S).group(0)
    assert f"<code>{token.prefix}&hellip;</code>" in row
    assert '>0\xa0minutes ago</time></td>' in row  # last used: by the call above


@pytest.mark.parametrize(("expires", "days"), [("7", 7), ("90", 90), ("365", 365), ("never", None)])
def test_lifetimes(users, client_as, expires, days):
    _create(client_as(users["viewer"]), expires=expires)
    token = ApiToken.objects.get()
    if days is None:
        assert token.expires is None
    else:
        assert abs(token.expires - timezone.now() - timedelta(days=days)) < timedelta(minutes=1)


@pytest.mark.parametrize(("data", "field", "message"), [
    ({"name": "", "expires": "30"}, "name", "This field is required."),
    ({"name": "x" * 101, "expires": "30"}, "name",
     "Ensure this value has at most 100 characters (it has 101)."),
    ({"name": "ci", "expires": "3"}, "expires",
     "Select a valid choice. 3 is not one of the available choices."),
    ({"name": "taken", "expires": "30"}, "name",
     "You already have an active token named &#x27;taken&#x27;."),
])
def test_bad_input_is_a_form_error(users, client_as, data, field, message):
    token_create(user=users["viewer"], name="taken")
    response = client_as(users["viewer"]).post("/tokens/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<label for="id_{field}">' in html and f'<ul class="errorlist"><li>{message}</li></ul>' in html
    assert 'id="new-token"' not in html
    assert ApiToken.objects.count() == 1


def test_revoke_stops_the_key(users, client_as):
    client = client_as(users["viewer"])
    token, key = token_create(user=users["viewer"], name="laptop")
    assert _api_status(key) == 200
    response = client.post(f"/tokens/{token.pk}/revoke/")
    assert (response.status_code, response["Location"]) == (302, "/tokens/")
    token.refresh_from_db()
    assert token.revoked is not None
    assert _api_status(key) == 401
    html = client.get("/tokens/").content.decode()
    assert "Token laptop (" in html and "is revoked: its key no longer works." in html
    row = re.search(r'<tr data-token="laptop" data-status="revoked" class="inactive">.*?</tr>', html, re.S)
    assert row and "Revoke&hellip;" not in row.group(0)
    # Revoking again changes nothing.
    revoked = token.revoked
    client.post(f"/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked == revoked


def test_only_own_tokens_are_listed_and_revoked(users, client_as):
    theirs, key = token_create(user=users["staff"], name="theirs")
    client = client_as(users["viewer"])
    assert client.post(f"/tokens/{theirs.pk}/revoke/").status_code == 404
    assert client.get(f"/tokens/{theirs.pk}/revoke/").status_code == 405
    theirs.refresh_from_db()
    assert theirs.revoked is None and _api_status(key) == 200
    assert 'id="no-tokens">You have no token yet.' in client.get("/tokens/").content.decode()


def test_an_expired_token_says_so(users, client_as):
    token, _ = token_create(user=users["viewer"], name="old")
    ApiToken.objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(days=1))
    html = client_as(users["viewer"]).get("/tokens/").content.decode()
    assert '<tr data-token="old" data-status="expired" class="inactive">' in html


def test_tokens_need_sign_in_and_are_in_the_nav(users, client_as):
    response = Client().get("/tokens/")
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/?next=/tokens/")
    assert Client().post("/tokens/", {"name": "x", "expires": "30"}).status_code == 302
    assert ApiToken.objects.count() == 0
    html = client_as(users["viewer"]).get("/tokens/").content.decode()
    assert '<a href="/tokens/" class="active">API tokens</a>' in html
    assert '<a href="/api/docs/">API docs</a>' in html

"""A password change revokes the user's API tokens (issue 33), whatever the path: set_password
and save, `manage.py users set-password`, the admin's password form."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from schedweb.api.models import ApiToken
from schedweb.api.services import token_create


def _status(key: str) -> int:
    return APIClient().get("/api/v1/queues/", HTTP_AUTHORIZATION=f"Token {key}").status_code


@pytest.fixture
def alice(make_user):
    user = make_user("alice")
    _, key = token_create(user=user, name="portal")
    _, other_key = token_create(user=make_user("bob"), name="portal")
    assert _status(key) == 200
    return user, key, other_key


def test_set_password_and_save_revokes_every_token_of_the_user(alice):
    user, key, other_key = alice
    user.set_password("a new password for alice")
    user.save()
    assert _status(key) == 401
    assert ApiToken.objects.get(user=user).revoked is not None  # kept, revoked
    assert _status(other_key) == 200  # another user's tokens are untouched


def test_the_users_command_revokes_them(alice):
    user, key, _ = alice
    call_command("users", "set-password", "alice", "--password-stdin", stdout=StringIO(),
                 stdin=StringIO("Another-long-passphrase-42\n"))
    assert _status(key) == 401


def test_the_admin_password_form_revokes_them(alice, make_user):
    user, key, _ = alice
    admin = make_user("root", staff=True)
    admin.is_superuser = True
    admin.save()
    browser = Client()
    browser.force_login(admin)
    response = browser.post(f"/admin/auth/user/{user.pk}/password/",
                            {"password1": "Yet-another-passphrase-7", "password2": "Yet-another-passphrase-7",
                             "usable_password": "true"})
    assert response.status_code == 302, response.content[:500]
    assert _status(key) == 401


def test_other_saves_keep_the_tokens(alice):
    user, key, _ = alice
    user.email = "alice@example.org"
    user.save()
    user.save(update_fields=["last_login"])
    assert _status(key) == 200

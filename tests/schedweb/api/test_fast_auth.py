"""The one-statement token lookup (schedweb.api.authentication.active_token) keeps the service's rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from schedweb.api.authentication import active_token
from schedweb.api.models import ApiToken
from schedweb.api.services import token_authenticate, token_create, token_revoke


def test_same_token_and_user_as_the_service(make_user):
    alice = make_user("alice", staff=True)
    token, key = token_create(user=alice, name="cli")
    fast, slow = active_token(key), token_authenticate(raw_key=key)
    assert (fast.pk, fast.name, fast.prefix, fast.user.pk, fast.user.username, fast.user.is_staff) == (
        slow.pk, "cli", token.prefix, alice.pk, "alice", True)
    assert fast.user.check_password("pw") and fast.created == slow.created


def test_unknown_revoked_and_expired_keys_get_nothing(make_user):
    user = make_user("bob")
    assert active_token("swt_nope") is None
    revoked, revoked_key = token_create(user=user, name="old")
    token_revoke(token=revoked)
    assert active_token(revoked_key) is None
    expiring, expiring_key = token_create(user=user, name="soon", expires=timezone.now() + timedelta(hours=1))
    assert active_token(expiring_key).pk == expiring.pk
    ApiToken.objects.filter(pk=expiring.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert active_token(expiring_key) is None


def test_last_used_is_refreshed_at_most_once_a_minute(make_user):
    token, key = token_create(user=make_user("carol"), name="t")
    assert token.last_used is None
    first = active_token(key).last_used
    assert ApiToken.objects.get(pk=token.pk).last_used == first
    assert active_token(key).last_used == first  # within the minute: no write
    old = first - timedelta(minutes=2)
    ApiToken.objects.filter(pk=token.pk).update(last_used=old)
    assert active_token(key).last_used > old and ApiToken.objects.get(pk=token.pk).last_used > old


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="the one fused statement is PostgreSQL's (other databases take the service)")
def test_a_token_read_of_a_cached_body_is_one_query_and_still_fresh(make_user, django_assert_num_queries):
    from rest_framework.test import APIClient

    from schedweb.core.services import queue_create

    _, key = token_create(user=make_user("dora"), name="t")
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    queue_create(name="q1")
    first = client.get("/api/v1/queues/tree/")
    with django_assert_num_queries(1):  # token, user and data version in one statement
        again = client.get("/api/v1/queues/tree/")
    assert again.content == first.content
    queue_create(name="q2")
    tree = client.get("/api/v1/queues/tree/").json()
    assert [c["name"] for c in tree["children"]] == ["default", "q1", "q2"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
def test_the_token_statement_is_prepared_once_per_connection(make_user):
    _, key = token_create(user=make_user("erin"), name="t")
    for _ in range(3):
        assert active_token(key) is not None
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                    ["%api_apitoken%"])
        assert cur.fetchone() == (1,)

"""Throttles key on the real client address (issue 33): a client-written X-Forwarded-For neither
escapes a limit nor adds a counter; behind TRUSTED_PROXY_COUNT proxies, the entry they added."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.test import APIClient, APIRequestFactory

from schedweb.api.throttling import AnonRateThrottle, BadTokenThrottle
from schedweb.http import login_throttle
from schedweb.http.client_address import client_address


@pytest.fixture
def rates(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES",
                        {"user": "1000/minute", "anon": "2/minute", "bad_token": "3/minute"})
    cache.clear()
    yield
    cache.clear()


def _meta(remote: str = "10.0.0.1", xff: str | None = None):
    extra = {"REMOTE_ADDR": remote}
    if xff is not None:
        extra["HTTP_X_FORWARDED_FOR"] = xff
    return RequestFactory().get("/", **extra)


@pytest.mark.parametrize(("proxies", "remote", "xff", "expected"), [
    (0, "10.0.0.1", None, "10.0.0.1"),
    (0, "10.0.0.1", "1.2.3.4", "10.0.0.1"),                  # the client's header is ignored
    (1, "10.0.0.9", "6.6.6.6, 1.2.3.4", "1.2.3.4"),          # the entry our proxy added
    (2, "10.0.0.9", "6.6.6.6, 1.2.3.4, 10.0.0.8", "1.2.3.4"),
    (2, "10.0.0.9", "1.2.3.4", "10.0.0.9"),                  # fewer entries than proxies
    (1, "10.0.0.9", "not-an-address", "10.0.0.9"),           # never text the client chose
    (1, "10.0.0.9", "::ffff:1.2.3.4", "1.2.3.4"),
    (0, "::ffff:10.0.0.1", None, "10.0.0.1"),
])
def test_client_address(settings, proxies, remote, xff, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    assert client_address(_meta(remote, xff)) == expected


def _anon(xff: str):
    request = APIRequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=xff)
    request.user = AnonymousUser()
    return request


def test_rotating_x_forwarded_for_neither_escapes_the_anonymous_limit_nor_adds_keys(db, rates):
    throttles = [AnonRateThrottle() for _ in range(3)]
    verdicts = [t.allow_request(_anon(f"203.0.113.{i}"), None) for i, t in enumerate(throttles)]
    assert verdicts == [True, True, False]
    keys = {t.get_cache_key(_anon(f"198.51.100.{i}"), None) for i, t in enumerate(throttles)}
    assert keys == {"throttle_anon_10.0.0.1"}  # one counter, whatever the header says


def test_rotating_x_forwarded_for_does_not_escape_the_bad_token_limit(db, rates):
    codes = [APIClient(REMOTE_ADDR="10.1.0.1", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").get(
        "/api/v1/queues/", HTTP_AUTHORIZATION="Token swt_unknown").status_code for i in range(4)]
    assert codes == [401, 401, 401, 429]
    assert BadTokenThrottle().get_cache_key(_anon("1.1.1.1"), None) == "throttle_bad_token_10.0.0.1"


def test_login_failures_count_against_the_peer_not_the_header(db, settings):
    settings.LOGIN_THROTTLE_IP_FAILURES = 2
    cache.clear()
    for i in range(3):
        address = login_throttle.client_ip(_meta("10.2.0.1", f"203.0.113.{i}"))
        login_throttle.record_failure(f"user{i}", address)
    assert login_throttle.failures(ip="10.2.0.1") == {"ip": 3}
    assert login_throttle.locked_for("", "10.2.0.1") > 0
    cache.clear()

"""schedweb.api.throttling: fixed-window counters with DRF's rates, scopes and 429 envelope; a
process's share of each rate while Redis is down; bad tokens counted per address."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework import throttling as drf_throttling
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate

from schedweb.api.throttling import AnonRateThrottle, UserRateThrottle


@pytest.fixture
def rates(monkeypatch):
    # DRF copies the rates into the class at import; patch the class as DRF's own tests do.
    monkeypatch.setattr(drf_throttling.SimpleRateThrottle, "THROTTLE_RATES",
                        {"user": "3/minute", "anon": "2/minute"})
    cache.clear()
    yield
    cache.clear()


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _user_request(user):
    request = APIRequestFactory().get("/api/v1/queues/")
    force_authenticate(request, user=user)
    request.user = user
    return request


def test_user_window_counts_and_resets(db, rates):
    alice, bob = (get_user_model().objects.create_user(n) for n in ("alice", "bob"))
    clock = Clock(6_000_000.0 + 15)  # 15 s into a minute window
    seen = []
    for _ in range(4):
        throttle = UserRateThrottle()
        throttle.timer = clock
        seen.append(throttle.allow_request(_user_request(alice), None))
    assert seen == [True, True, True, False]
    assert throttle.wait() == 45.0  # the rest of the window
    other = UserRateThrottle()
    other.timer = clock
    assert other.allow_request(_user_request(bob), None)  # per user
    clock.t += 45  # the next window
    fresh = UserRateThrottle()
    fresh.timer = clock
    assert fresh.allow_request(_user_request(alice), None)


def _anon_request(address: str):
    from django.contrib.auth.models import AnonymousUser

    request = APIRequestFactory().get("/", REMOTE_ADDR=address)
    request.user = AnonymousUser()
    return request


def test_anon_counts_per_address(db, rates):
    verdicts = [AnonRateThrottle().allow_request(_anon_request("10.0.0.1"), None) for _ in range(3)]
    assert verdicts == [True, True, False]
    assert AnonRateThrottle().allow_request(_anon_request("10.0.0.2"), None)


def test_a_refusal_is_drfs_429_envelope_with_retry_after(db, rates):
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("carol"))
    assert [client.get("/api/v1/queues/").status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/api/v1/queues/")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "throttled"
    assert 1 <= int(refused["Retry-After"]) <= 60


def test_the_counter_is_one_small_cache_entry(db, rates):
    user = get_user_model().objects.create_user("dave")
    throttle = UserRateThrottle()
    for _ in range(3):
        throttle.allow_request(_user_request(user), None)
    window = int(throttle.now // throttle.duration)
    assert cache.get(f"{throttle.get_cache_key(_user_request(user), None)}:w{window}") == 3


def test_redis_down_each_process_counts_against_its_share(db, rates, settings):
    # The per-process fallback must not multiply a rate by the number of web processes.
    settings.CACHES = {"default": {"BACKEND": "schedweb.http.cache_backend.ResilientRedisCache",
                                   "LOCATION": "redis://127.0.0.1:9/0", "KEY_PREFIX": "down"}}
    settings.THROTTLE_PROCESSES = 3
    user = get_user_model().objects.create_user("erin")
    clock = Clock(6_000_000.0)
    seen = []
    for _ in range(3):  # the user rate is 3/minute: 3 // 3 = 1 per process while Redis is down
        throttle = UserRateThrottle()
        throttle.timer = clock
        seen.append(throttle.allow_request(_user_request(user), None))
    assert seen == [True, False, False]
    assert throttle.cache.local
    throttle.cache.clear()


def test_bad_token_throttle_counts_per_address(db, monkeypatch):
    from schedweb.api.throttling import BadTokenThrottle, bad_token_wait

    monkeypatch.setattr(drf_throttling.SimpleRateThrottle, "THROTTLE_RATES", {"bad_token": "2/minute"})
    cache.clear()
    request = _anon_request("10.0.0.3")
    assert [bad_token_wait(request) is None for _ in range(3)] == [True, True, False]
    assert bad_token_wait(_anon_request("10.0.0.4")) is None
    monkeypatch.setattr(drf_throttling.SimpleRateThrottle, "THROTTLE_RATES", {})
    assert BadTokenThrottle().get_rate() == "30/minute"  # the default when settings name none
    cache.clear()

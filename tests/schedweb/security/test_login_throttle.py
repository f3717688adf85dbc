"""Login throttling per username and per address (capped back-off, admin reset, Redis-down
limits), on every login view; and the DRF rates configured."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import NoReverseMatch, reverse

from schedweb.http import login_throttle


def login_paths() -> list[str]:
    """The admin login and, once the dashboard exists, its login page."""
    paths = ["/admin/login/"]
    with contextlib.suppress(NoReverseMatch):
        paths.append(reverse("dashboard:login"))
    return paths


class Clock:
    """login_throttle.now, moved by hand (no test waits for a lock to end)."""

    def __init__(self) -> None:
        self.t = 1_900_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    cache.clear()
    fake = Clock()
    monkeypatch.setattr(login_throttle, "now", fake)
    yield fake
    cache.clear()


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="right-pw", is_staff=True)


def attempt(path: str, password: str, ip: str = "10.0.0.1", username: str = "alice"):
    return Client(REMOTE_ADDR=ip).post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", login_paths())
def test_five_failures_lock_the_username_from_every_address(alice, path):
    for _ in range(4):
        assert attempt(path, "wrong").status_code == 200  # the form again, with its error
    assert attempt(path, "right-pw").status_code == 302  # 4 failures: not locked yet
    for _ in range(5):
        assert attempt(path, "wrong").status_code == 200
    for ip in ("10.0.0.1", "10.9.9.9"):  # the username is locked, whatever the address
        locked = attempt(path, "right-pw", ip=ip)
        assert (locked.status_code, locked["Retry-After"]) == (429, "1")
        assert locked.content == b"Too many failed logins; try again later.\n"
    # Another username from the same address is not affected (the address has 5 of 20).
    assert attempt(path, "wrong", username="bob").status_code == 200


@pytest.mark.parametrize("path", login_paths())
def test_twenty_failures_lock_the_address_for_every_username(alice, path):
    # The case: many usernames from one address were never throttled (per pair only).
    for i in range(19):
        assert attempt(path, "guess", username=f"user{i}").status_code == 200
    assert login_throttle.failures(ip="10.0.0.1") == {"ip": 19}
    assert attempt(path, "guess", username="user19").status_code == 200  # the 20th: address locked
    locked = attempt(path, "right-pw")
    assert (locked.status_code, locked["Retry-After"]) == (429, "1")
    assert attempt(path, "right-pw", ip="10.0.0.2").status_code == 302  # another address


def test_the_owner_gets_in_after_the_back_off(alice, clock):
    for _ in range(5):
        attempt("/admin/login/", "wrong")
    assert attempt("/admin/login/", "right-pw").status_code == 429
    clock.t += 1  # the first lock is 1 s
    assert attempt("/admin/login/", "right-pw").status_code == 302
    assert login_throttle.failures("alice", "10.0.0.1") == {"user": 0, "ip": 5}  # success: user only


def test_each_failure_past_the_limit_doubles_the_lock_up_to_the_cap(alice, clock):
    seen = []
    for _ in range(14):
        attempt("/admin/login/", "wrong", ip="10.0.0.7")
        seen.append(login_throttle.locked_for("alice", ""))
        clock.t += seen[-1]  # an attacker who waits out every lock
    assert seen == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert attempt("/admin/login/", "right-pw").status_code == 302  # 300 s after, the owner is in


@pytest.mark.parametrize(("failures", "limit", "expected"), [
    (0, 5, 0.0), (4, 5, 0.0), (5, 5, 1.0), (6, 5, 2.0), (13, 5, 256.0), (14, 5, 300.0),
    (10**9, 5, 300.0), (20, 20, 1.0),
])
def test_backoff_seconds(failures, limit, expected):
    assert login_throttle.backoff_seconds(failures, limit) == expected


def test_attempts_refused_by_a_lock_are_not_counted(alice):
    for _ in range(5):
        attempt("/admin/login/", "wrong")
    for _ in range(3):
        assert attempt("/admin/login/", "wrong").status_code == 429
    assert login_throttle.failures("alice", "10.0.0.1") == {"user": 5, "ip": 5}


def test_json_clients_get_the_error_envelope(alice):
    for _ in range(5):
        attempt("/admin/login/", "wrong")
    response = Client(REMOTE_ADDR="10.0.0.1").post("/admin/login/", {"username": "ALICE", "password": "x"},
                                                   HTTP_ACCEPT="application/json")
    assert response.status_code == 429
    assert response.json() == {"error": {"code": "too_many_login_failures",
                                         "message": "Too many failed logins; try again later.", "fields": {}}}


def test_backend_refuses_a_locked_username_outside_login_views(alice, rf, clock):
    request = rf.post("/anything/", REMOTE_ADDR="10.0.0.9")
    for _ in range(5):
        assert authenticate(request, username="alice", password="wrong") is None
    elsewhere = rf.post("/x/", REMOTE_ADDR="10.0.0.10")
    assert authenticate(elsewhere, username="alice", password="right-pw") is None
    assert login_throttle.failures("alice", "") == {"user": 5}  # the refused try was not counted
    clock.t += 1
    assert authenticate(elsewhere, username="alice", password="right-pw") == alice


@pytest.mark.parametrize(("options", "address", "expected"), [
    ({"username": ["ALICE"]}, "10.0.0.1", 302),  # usernames are case-insensitive here
    ({"ip": ["10.0.0.1"]}, "10.0.0.1", 429),  # the username stays locked
    ({"username": ["alice"], "ip": ["10.0.0.1"]}, "10.0.0.1", 302),
])
def test_throttle_reset_command(alice, options, address, expected, capsys):
    for _ in range(5):
        attempt("/admin/login/", "wrong")
    call_command("throttle_reset", **options)
    assert attempt("/admin/login/", "right-pw", ip=address).status_code == expected
    out = capsys.readouterr().out
    assert ("login throttle reset for username" in out) == ("username" in options)


def test_throttle_reset_lifts_an_address_lock(alice):
    for i in range(20):
        attempt("/admin/login/", "guess", username=f"user{i}")
    assert attempt("/admin/login/", "right-pw").status_code == 429
    call_command("throttle_reset", ip=["10.0.0.1"])
    assert login_throttle.failures(ip="10.0.0.1") == {"ip": 0}
    assert attempt("/admin/login/", "right-pw").status_code == 302


def test_throttle_reset_needs_a_subject():
    with pytest.raises(CommandError, match="name at least one --username or --ip"):
        call_command("throttle_reset")


@pytest.fixture
def redis_down(settings):
    """The deployment's cache with Redis unreachable (port 9 refuses at once): process memory."""
    settings.CACHES = {"default": {"BACKEND": "schedweb.http.cache_backend.ResilientRedisCache",
                                   "LOCATION": "redis://127.0.0.1:9/0", "KEY_PREFIX": uuid.uuid4().hex}}
    settings.THROTTLE_PROCESSES = 2
    yield
    cache.clear()  # the per-process fallback is shared by every instance in this process


def test_redis_down_each_process_gets_its_share_of_the_limit(alice, redis_down):
    # Two processes counting alone would allow 2 x 5 failures; each now locks at 5 // 2 = 2.
    for _ in range(2):
        assert attempt("/admin/login/", "wrong").status_code == 200
    assert cache.local  # counted in this process's memory
    locked = attempt("/admin/login/", "right-pw")
    assert (locked.status_code, locked["Retry-After"]) == (429, "1")


def test_redis_down_address_limit_is_shared_out_too(alice, redis_down):
    for i in range(10):  # 20 // 2
        assert attempt("/admin/login/", "guess", username=f"user{i}").status_code == 200
    assert attempt("/admin/login/", "right-pw").status_code == 429


def test_rest_framework_rates_are_configured(settings):
    conf = settings.REST_FRAMEWORK
    assert conf["DEFAULT_THROTTLE_CLASSES"] == ["schedweb.api.throttling.AnonRateThrottle",
                                                "schedweb.api.throttling.UserRateThrottle"]
    assert conf["DEFAULT_THROTTLE_RATES"] == {"anon": "120/minute", "user": "20000/minute",
                                              "bad_token": "30/minute"}


def test_login_throttle_settings():
    from django.conf import settings

    assert login_throttle.limits() == login_throttle.Limits(
        user_failures=5, ip_failures=20, window=900, backoff=1.0, max_backoff=300.0)
    assert (settings.THROTTLE_PROCESSES, settings.AUTHENTICATION_BACKENDS) == (
        2, ["schedweb.http.login_throttle.ThrottledModelBackend"])

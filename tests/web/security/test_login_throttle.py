"""Login throttling per (username, IP) on every login view, and DRF request rates."""

from __future__ import annotations

import contextlib

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import NoReverseMatch, reverse
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle


def login_paths() -> list[str]:
    """The admin login and, once the dashboard exists, its login page."""
    paths = ["/admin/login/"]
    with contextlib.suppress(NoReverseMatch):
        paths.append(reverse("dashboard:login"))
    return paths


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="right-pw", is_staff=True)


def attempt(path: str, password: str, ip: str = "10.0.0.1", username: str = "alice"):
    return Client(REMOTE_ADDR=ip).post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", login_paths())
def test_ten_failures_lock_the_pair_with_429(alice, path, settings):
    for _ in range(settings.LOGIN_THROTTLE_FAILURES):
        assert attempt(path, "wrong").status_code == 200  # the form again, with its error
    locked = attempt(path, "right-pw")
    assert locked.status_code == 429
    assert locked["Retry-After"] == "900"
    assert locked.content == b"Too many failed logins; try again later.\n"
    # Another address, or another username from the same address, is not affected.
    assert attempt(path, "right-pw", ip="10.0.0.2").status_code == 302
    assert attempt(path, "wrong", username="bob").status_code == 200


def test_json_clients_get_the_error_envelope(alice):
    for _ in range(10):
        attempt("/admin/login/", "wrong")
    response = Client(REMOTE_ADDR="10.0.0.1").post("/admin/login/", {"username": "ALICE", "password": "x"},
                                                   HTTP_ACCEPT="application/json")
    assert response.status_code == 429
    assert response.json() == {"error": {"code": "too_many_login_failures",
                                         "message": "Too many failed logins; try again later.", "fields": {}}}


def test_success_before_the_limit_resets_the_count(alice):
    for _ in range(9):
        attempt("/admin/login/", "wrong")
    assert attempt("/admin/login/", "right-pw").status_code == 302
    for _ in range(9):
        assert attempt("/admin/login/", "wrong").status_code == 200
    assert attempt("/admin/login/", "right-pw").status_code == 302


def test_backend_refuses_locked_pair_even_outside_login_views(alice, rf):
    from django.contrib.auth import authenticate

    request = rf.post("/anything/", REMOTE_ADDR="10.0.0.9")
    for _ in range(10):
        assert authenticate(request, username="alice", password="wrong") is None
    assert authenticate(request, username="alice", password="right-pw") is None
    elsewhere = rf.post("/x/", REMOTE_ADDR="10.0.0.10")
    assert authenticate(elsewhere, username="alice", password="right-pw") == alice


def test_drf_user_rate_gives_429_envelope(alice, monkeypatch):
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"})
    client = APIClient()
    client.force_authenticate(alice)
    assert [client.get("/api/v1/queues/").status_code for _ in range(3)] == [200, 200, 200]
    response = client.get("/api/v1/queues/")
    assert response.status_code == 429
    body = response.json()["error"]
    assert body["code"] == "throttled" and body["message"].startswith("Request was throttled.")


def test_rest_framework_rates_are_configured(settings):
    conf = settings.REST_FRAMEWORK
    assert conf["DEFAULT_THROTTLE_CLASSES"] == ["schedweb.api.throttling.AnonRateThrottle",
                                                "schedweb.api.throttling.UserRateThrottle"]
    assert conf["DEFAULT_THROTTLE_RATES"] == {"anon": "120/minute", "user": "20000/minute"}

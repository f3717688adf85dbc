"""The API fast path (schedweb.api.fastpath): cached token-authenticated GETs of the queue tree and
job list answered without DRF's view, byte for byte as the view answers them; everything else
(other auth, other media types, bad tokens, throttled clients, cache misses) goes to the view."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError
from django.test import override_settings
from django.utils import timezone
from rest_framework.permissions import IsAdminUser
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from schedweb.api import authentication, fastpath
from schedweb.api import cache as api_cache
from schedweb.api.models import ApiToken
from schedweb.api.services import token_create, token_revoke
from schedweb.api.views.queues import QueueViewSet
from schedweb.core import services

from .conftest import make_job, make_queue

TREE, JOBS = "/api/v1/queues/tree/", "/api/v1/jobs/"
FAST = "schedweb.api.fastpath.FastPathMiddleware"


@pytest.fixture
def views_run(monkeypatch) -> list[str]:
    """Paths that went through a DRF view (APIView.initial) during the test."""
    seen: list[str] = []
    initial = APIView.initial

    def counting(self, request, *args, **kwargs):
        seen.append(request.path)
        return initial(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", counting)
    return seen


def client(*, fast: bool = True, **headers) -> APIClient:
    """An APIClient whose handler has (or, for the normal path, lacks) the fast path middleware."""
    assert FAST in django_settings.MIDDLEWARE
    middleware = [m for m in django_settings.MIDDLEWARE if fast or m != FAST]
    with override_settings(MIDDLEWARE=middleware):
        api = APIClient(**headers)
        api.handler.load_middleware()  # kept by the handler after the override ends
    return api


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def key(alice) -> str:
    return token_create(user=alice, name="cli")[1]


@pytest.fixture
def cluster(db):
    queue = make_queue("leaf", make_queue("team"))
    make_job(queue, "j1", tasks=2)
    make_job(queue, "j2", tasks=1)
    return queue


def _same(fast, normal) -> None:
    assert fast.status_code == normal.status_code
    assert fast.content == normal.content
    assert list(fast.headers.items()) == list(normal.headers.items())
    assert {k: v.OutputString() for k, v in fast.cookies.items()} == {
        k: v.OutputString() for k, v in normal.cookies.items()}


@pytest.mark.parametrize("path", [TREE, JOBS, JOBS + "?phase=Pending", JOBS + "?ordering=name&limit=1",
                                  JOBS + "?format=json", TREE + "?format=json"])
@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_fast_answer_is_the_normal_answer_byte_for_byte(cluster, key, views_run, path, accept):
    headers = {"HTTP_AUTHORIZATION": f"Token {key}", "HTTP_X_REQUEST_ID": "req-42"}
    if accept is not None:
        headers["HTTP_ACCEPT"] = accept
    normal = client(fast=False, **headers)
    first = normal.get(path)  # computes and caches the body
    assert first.status_code == 200 and views_run == [path.split("?")[0]]
    fast = client(**headers).get(path)
    assert views_run == [path.split("?")[0]]  # no view ran for the fast answer
    again = normal.get(path)
    assert len(views_run) == 2
    _same(fast, again)
    _same(fast, first)
    assert fast["Content-Type"] == "application/json" and fast["ETag"].startswith('"')
    assert fast["X-Request-ID"] == "req-42" and fast["X-Frame-Options"] == "DENY"
    assert fast["X-Content-Type-Options"] == "nosniff" and fast["Vary"] == "Accept"
    assert fast["Allow"] == ("GET, HEAD, OPTIONS" if path.startswith(TREE) else "GET, POST, HEAD, OPTIONS")
    assert fast["Content-Length"] == str(len(fast.content))


def test_tree_and_job_list_bodies(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)
    api.get(JOBS + "?phase=Pending")
    tree, jobs = api.get(TREE).json(), api.get(JOBS + "?phase=Pending").json()
    assert views_run == [TREE, JOBS]
    assert [(c["name"], [g["name"] for g in c["children"]]) for c in tree["children"]] == [
        ("default", []), ("team", ["leaf"])]
    assert [(r["name"], r["task_count"], r["pending_count"]) for r in jobs["results"]] == [
        ("j2", 1, 1), ("j1", 2, 2)]
    assert jobs["count"] == 2


def test_a_generated_request_id_is_echoed(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)
    response = api.get(TREE)
    assert views_run == [TREE]
    assert len(response["X-Request-ID"]) == 32  # uuid4().hex from AuditContextMiddleware


@pytest.mark.parametrize("path", [TREE, JOBS + "?phase=Pending"])
def test_if_none_match_gets_the_same_304(cluster, key, views_run, path):
    headers = {"HTTP_AUTHORIZATION": f"Token {key}", "HTTP_X_REQUEST_ID": "r"}
    etag = client(fast=False, **headers).get(path)["ETag"]
    fast = client(**headers).get(path, HTTP_IF_NONE_MATCH=etag)
    normal = client(fast=False, **headers).get(path, HTTP_IF_NONE_MATCH=etag)
    assert len(views_run) == 2
    assert (fast.status_code, fast.content, fast["ETag"]) == (304, b"", etag)
    _same(fast, normal)
    weak = client(**headers).get(path, HTTP_IF_NONE_MATCH=f'W/{etag}, "other"')
    assert weak.status_code == 304
    changed = client(**headers).get(path, HTTP_IF_NONE_MATCH='"not-it"')
    assert (changed.status_code, changed["ETag"]) == (200, etag)
    assert len(views_run) == 2


def test_nothing_cached_goes_to_the_view_which_caches(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    first = api.get(TREE)
    assert views_run == [TREE]
    assert api.get(TREE).content == first.content and views_run == [TREE]


def test_shared_cache_body_is_served_fast(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    first = api.get(TREE)
    api_cache.clear_local()  # as in another worker: the body is only in the shared cache
    again = api.get(TREE)
    assert views_run == [TREE] and (again.content, again["ETag"]) == (first.content, first["ETag"])


def _bad_keys(make_user, alice) -> dict[str, str]:
    revoked, revoked_key = token_create(user=alice, name="revoked")
    token_revoke(token=revoked)
    soon = timezone.now() + timedelta(hours=1)
    expired, expired_key = token_create(user=alice, name="expired", expires=soon)
    ApiToken.objects.filter(pk=expired.pk).update(expires=timezone.now() - timedelta(seconds=1))
    gone = make_user("gone")
    _, gone_key = token_create(user=gone, name="t")
    gone.is_active = False
    gone.save()
    return {"unknown": "swt_not-a-key", "revoked": revoked_key, "expired": expired_key, "inactive": gone_key}


def test_bad_tokens_get_the_normal_401(cluster, key, make_user, alice, views_run):
    assert client(HTTP_AUTHORIZATION=f"Token {key}").get(TREE).status_code == 200  # body cached
    for path in (TREE, JOBS):
        client(HTTP_AUTHORIZATION=f"Token {key}").get(path)
    for name, bad in _bad_keys(make_user, alice).items():
        for path in (TREE, JOBS):
            headers = {"HTTP_AUTHORIZATION": f"Token {bad}", "HTTP_X_REQUEST_ID": "r"}
            fast = client(**headers).get(path)
            normal = client(fast=False, **headers).get(path)
            assert fast.status_code == 401, name
            assert fast.json()["error"]["code"] == "authentication_failed", name
            assert b"leaf" not in fast.content and b"j1" not in fast.content
            _same(fast, normal)
    for header in ("Token", "Token a b", "Basic YWxpY2U6cHc=", "Bearer swt_nope", "Token sw\u00e9"):
        fast = client(HTTP_AUTHORIZATION=header, HTTP_X_REQUEST_ID="r").get(TREE)
        normal = client(fast=False, HTTP_AUTHORIZATION=header, HTTP_X_REQUEST_ID="r").get(TREE)
        assert fast.status_code in (401, 403) and b"leaf" not in fast.content, header
        _same(fast, normal)
    anonymous = client(HTTP_X_REQUEST_ID="r").get(TREE)
    assert anonymous.status_code == 401 and b"leaf" not in anonymous.content


def test_the_fast_path_keeps_last_used_fresh(cluster, alice, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)
    old = timezone.now() - timedelta(minutes=5)
    ApiToken.objects.filter(name="cli").update(last_used=old)
    assert api.get(TREE).status_code == 200 and views_run == [TREE]
    assert ApiToken.objects.get(name="cli").last_used > old


def test_session_auth_goes_to_the_view(cluster, alice, key, views_run):
    client(HTTP_AUTHORIZATION=f"Token {key}").get(TREE)  # body cached
    session = client(HTTP_X_REQUEST_ID="r")
    session.force_login(alice)
    response = session.get(TREE)
    normal = client(fast=False, HTTP_X_REQUEST_ID="r")
    normal.force_login(alice)
    assert response.status_code == 200 and views_run == [TREE, TREE]
    _same(response, normal.get(TREE))


@pytest.mark.parametrize(("query", "accept", "status", "content_type"), [
    ("", "text/html", 200, "text/html; charset=utf-8"),
    ("?format=api", None, 200, "text/html; charset=utf-8"),
    ("?format=api", "application/json", 406, "application/json"),  # DRF: format wins, not acceptable
    ("", "application/json; indent=4", 200, "application/json"),  # a body of its own, indented
])
def test_other_renderings_go_to_the_view(cluster, key, views_run, query, accept, status, content_type):
    headers = {"HTTP_AUTHORIZATION": f"Token {key}"}
    client(**headers).get(TREE + query)  # a JSON body cached for the same URL
    client(**headers).get(TREE)
    views_run.clear()
    if accept is not None:
        headers["HTTP_ACCEPT"] = accept
    response = client(**headers).get(TREE + query)
    assert views_run == [TREE]
    assert (response.status_code, response["Content-Type"]) == (status, content_type)
    if "indent" in (accept or ""):
        assert b'\n    "name"' in response.content and response["ETag"].startswith('"')
    elif status == 200:
        assert b"<html" in response.content and "ETag" not in response


def test_other_endpoints_and_methods_go_to_the_view(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)
    views_run.clear()
    assert api.head(TREE).status_code == 200
    assert api.get("/api/v1/queues/").status_code == 200
    assert api.get(TREE.rstrip("/")).status_code in (301, 404)
    assert views_run[:2] == [TREE, "/api/v1/queues/"]


def test_throttle_counts_fast_answers_and_still_gives_429(cluster, key, views_run, monkeypatch, settings):
    # DRF reads its rates into the throttle class at import: a REST_FRAMEWORK override alone does
    # not reach it, so the class's rates are patched as well.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"anon": "3/minute", "user": "3/minute"}}
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": "3/minute"})
    from django.core.cache import cache

    cache.clear()
    api = client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_X_REQUEST_ID="r")
    assert [api.get(TREE).status_code for _ in range(3)] == [200, 200, 200]
    assert views_run == [TREE]  # two of the three were fast, and counted
    refused = api.get(TREE)
    assert refused.status_code == 429 and views_run == [TREE, TREE]
    assert refused.json()["error"]["code"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 60
    assert api.get(JOBS).status_code == 429  # per user, across endpoints
    cache.clear()  # a new window
    assert api.get(TREE).status_code == 200


def test_a_new_queue_or_job_gives_the_new_body(cluster, key, views_run):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)
    api.get(JOBS)
    assert [c["name"] for c in api.get(TREE).json()["children"]] == ["default", "team"]
    services.queue_create(name="extra")
    assert [c["name"] for c in api.get(TREE).json()["children"]] == ["default", "extra", "team"]
    assert [c["name"] for c in api.get(TREE).json()["children"]] == ["default", "extra", "team"]  # fast again
    assert views_run == [TREE, JOBS, TREE]
    assert [r["name"] for r in api.get(JOBS).json()["results"]] == ["j2", "j1"]  # new version: view
    assert [r["name"] for r in api.get(JOBS).json()["results"]] == ["j2", "j1"]
    make_job(cluster, "j3", tasks=1)  # services.job_submit
    assert [r["name"] for r in api.get(JOBS).json()["results"]] == ["j3", "j2", "j1"]
    assert [r["name"] for r in api.get(JOBS).json()["results"]] == ["j3", "j2", "j1"]
    assert views_run == [TREE, JOBS, TREE, JOBS, JOBS]


def test_a_view_with_other_policies_is_not_fast(cluster, key, views_run, monkeypatch):
    monkeypatch.setattr(QueueViewSet, "permission_classes", [IsAdminUser])
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    assert [api.get(TREE).status_code for _ in range(2)] == [403, 403]
    assert views_run == [TREE, TREE]
    assert set(fastpath._endpoints()) == {JOBS}


def test_database_errors_get_the_views_503(cluster, key, views_run, monkeypatch):
    api = client(HTTP_AUTHORIZATION=f"Token {key}")
    api.get(TREE)

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(authentication, "active_token", down)  # the one token check of both paths
    response = api.get(TREE)
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "database_unavailable"


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "token"])
def test_one_token_check_for_both_paths(cluster, key, views_run, scheme):
    headers = {"HTTP_AUTHORIZATION": f"{scheme} {key}", "HTTP_X_REQUEST_ID": "r"}
    normal = client(fast=False, **headers).get(TREE)
    fast = client(**headers).get(TREE)
    assert views_run == [TREE]  # any scheme the authenticator takes is answered fast
    _same(fast, normal)


@pytest.mark.parametrize(("value", "installed"), [("1", True), ("0", False), (None, True)])
def test_the_fast_path_is_behind_a_setting(value, installed):
    env = {k: v for k, v in os.environ.items() if k != "API_FAST_PATH"}
    if value is not None:
        env["API_FAST_PATH"] = value
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
         f"print({FAST!r} in settings.MIDDLEWARE, settings.API_FAST_PATH)"],
        env={**env, "DJANGO_SETTINGS_MODULE": "schedweb.settings", "DEBUG": "1"},
        capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(installed), str(installed)]

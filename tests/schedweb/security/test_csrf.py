"""CSRF: every URL of the site refuses a cookie-authenticated POST without a token (403), while
API token clients (no ambient cookie) need none."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

from schedweb.api.services import token_create


def named_urls(patterns=None, namespace: str = "") -> list[tuple[str, list[str]]]:
    """(view name with namespace, its URL parameters) of every named pattern of the site."""
    found: list[tuple[str, list[str]]] = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            found.extend(named_urls(pattern.url_patterns, inner))
        elif isinstance(pattern, URLPattern) and pattern.name:
            found.append((f"{namespace}{pattern.name}", list(pattern.pattern.regex.groupindex)))
    return found


def site_paths() -> list[str]:
    """One concrete path per named URL (parameters filled with "1")."""
    paths = set()
    for name, params in named_urls():
        if "format" in params:
            continue  # DRF's ".json" suffix twins of the same views
        try:
            paths.add(reverse(name, kwargs={p: "1" for p in params}))
        except NoReverseMatch:
            continue  # e.g. patterns with fixed choices that "1" does not satisfy
    return sorted(paths)


@pytest.fixture
def browser(db):
    user = get_user_model().objects.create_superuser("root-user", password="pw")
    client = Client(enforce_csrf_checks=True)
    assert client.login(username="root-user", password="pw")
    return client, user


def test_the_walk_covers_admin_api_and_pages():
    paths = site_paths()
    assert "/admin/core/queue/add/" in paths and "/api/v1/queues/" in paths and "/admin/login/" in paths
    assert len(paths) > 50


def test_every_post_without_token_is_403(browser):
    client, _ = browser
    allowed = {p: client.post(p, {"name": "x"}).status_code for p in site_paths()}
    assert {p: code for p, code in allowed.items() if code != 403} == {}


def test_the_same_post_with_a_token_passes_csrf(browser):
    client, _ = browser
    client.get("/admin/core/priorityclass/add/")
    token = client.cookies["csrftoken"].value
    response = client.post("/admin/core/priorityclass/add/", {
        "name": "gold", "value": "10", "preemption_policy": "Never", "description": "",
        "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_api_token_clients_need_no_csrf_token(browser):
    _, user = browser
    _, key = token_create(user=user, name="script")
    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/v1/priority-classes/", {"name": "gold", "value": 10},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 201


def test_session_api_post_without_token_gets_envelope(browser):
    client, _ = browser
    response = client.post("/api/v1/priority-classes/", {"name": "gold", "value": 10},
                           content_type="application/json")
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "permission_denied" and error["message"].startswith("CSRF Failed")

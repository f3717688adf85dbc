"""Security headers and cookie flags of the production settings, seen on real responses
(in a subprocess: settings are read once per process); the Content-Security-Policy on every kind
of response, with a nonce only where a page used one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from schedweb.core import services
from schedweb.scheduling.cycle import cycle_run

ROOT = Path(__file__).resolve().parents[3]
POLICY = ("default-src 'self'; script-src 'self'; "
          "style-src 'self' 'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o='; "
          "style-src-attr 'unsafe-hashes' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='; "
          "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
          "form-action 'self'; frame-ancestors 'none'")

PROBE = """
import json, django
django.setup()
from django.test import Client
from django.test.utils import override_settings
# No collectstatic here: plain static storage instead of the manifest (headers are the point).
override_settings(STORAGES={"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}).enable()
client = Client(raise_request_exception=False)
health = client.get("/healthz", secure=True)
login = client.get("/admin/login/", secure=True)
plain = client.get("/admin/login/")
cookie = login.cookies["csrftoken"]
print(json.dumps({
    "headers": {k: health.get(k) for k in (
        "Strict-Transport-Security", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options",
        "Cross-Origin-Opener-Policy", "Content-Security-Policy")},
    "login_frame": login.get("X-Frame-Options"),
    "csrf_cookie": {"secure": bool(cookie["secure"]), "httponly": bool(cookie["httponly"]),
                    "samesite": cookie["samesite"]},
    "http_redirect": [plain.status_code, plain.get("Location")],
}))
"""


def probe(tmp_path: Path) -> dict:
    cleared = ("DJANGO_SETTINGS_MODULE", "PYTEST_VERSION", "DEBUG")
    env = {k: v for k, v in os.environ.items() if k not in cleared}
    env.update(DJANGO_SETTINGS_MODULE="schedweb.settings_production", SECRET_KEY="p" * 60,
               ALLOWED_HOSTS="testserver", DATABASE_URL=f"sqlite:///{tmp_path / 'headers.sqlite3'}",
               REDIS_URL="")
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_headers_and_cookies(tmp_path):
    got = probe(tmp_path)
    assert got["headers"] == {
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains; preload",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Content-Security-Policy": POLICY,
    }
    assert got["login_frame"] == "DENY"
    assert got["csrf_cookie"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert got["http_redirect"] == [301, "https://testserver/admin/login/"]


def test_development_responses_also_deny_framing_and_sniffing(client, db):
    response = client.get("/admin/login/")
    assert (response["X-Frame-Options"], response["X-Content-Type-Options"], response["Referrer-Policy"]) == (
        "DENY", "nosniff", "same-origin")


def _with_nonce(nonce: str) -> str:
    return POLICY.replace("script-src 'self'", f"script-src 'self' 'nonce-{nonce}'").replace(
        "E/o=';", f"E/o=' 'nonce-{nonce}';")


@pytest.mark.parametrize(("path", "status"), [
    ("/admin/login/", 200),  # an HTML page that needs no nonce
    ("/healthz", 200),
    ("/api/v1/queues/", 401),  # JSON
    ("/no-such-page/", 404),
    ("/static/dashboard/dashboard.css", 200),  # whitenoise answers before the views
])
def test_every_response_has_the_strict_policy(client, db, path, status):
    response = client.get(path)
    assert (response.status_code, response["Content-Security-Policy"]) == (status, POLICY)


def test_pages_that_use_the_nonce_name_it(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("staff", is_staff=True))
    for path in ("/nodes/", "/api/docs/"):
        response = client.get(path)
        nonces = set(re.findall(r'nonce="([^"]+)"', response.content.decode()))
        assert len(nonces) == 1, path  # one per response, on every inline element
        (nonce,) = nonces
        assert response["Content-Security-Policy"] == _with_nonce(nonce)
    assert client.get("/nodes/")["Content-Security-Policy"] != response["Content-Security-Policy"]  # fresh


def test_no_inline_script_or_style_without_the_nonce(client, django_user_model):
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    client.force_login(staff)
    queue = services.queue_create(name="q1", admin_users=[staff], guarantee={"cpu": "1"})
    services.node_create(name="n1", allocatable={"cpu": "8", "memory": "16Gi"})
    services.job_submit(namespace="ns1", name="j1", queue=queue,
                        tasks=[{"name": "t1", "request": {"cpu": "1"}}], submitted_by=staff)
    cycle_run()
    for path in ("/", "/queues/", "/queues/q1/", "/nodes/", "/mine/", "/jobs/pending/", "/jobs/ns1/j1/",
                 "/audit/", "/api/docs/"):
        html = client.get(path).content.decode()
        inline = re.findall(r"<(?:script|style)(?![^>]*\b(?:src|nonce)=)[^>]*>", html)
        assert [tag for tag in inline if "application/json" not in tag] == [], path
        assert re.findall(r"<[^>]+\s(?:style|on[a-z]+)=", html) == [], path


def test_report_only_and_replaced_directives(client, db, settings):
    settings.CSP_REPORT_ONLY = True
    settings.CSP_DIRECTIVES = {"img-src": ["'self'"], "report-uri": ["/csp-report/"]}
    response = client.get("/healthz")
    assert "Content-Security-Policy" not in response
    expected = POLICY.replace("img-src 'self' data:", "img-src 'self'") + "; report-uri /csp-report/"
    assert response["Content-Security-Policy-Report-Only"] == expected


def test_a_view_may_set_its_own_policy(rf):
    from django.http import HttpResponse

    from schedweb.http.csp import ContentSecurityPolicyMiddleware

    own = HttpResponse()
    own["Content-Security-Policy"] = "sandbox"
    response = ContentSecurityPolicyMiddleware(lambda request: own)(rf.get("/"))
    assert response["Content-Security-Policy"] == "sandbox"

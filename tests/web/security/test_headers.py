"""Security headers and cookie flags of the production settings, seen on real responses
(in a subprocess: settings are read once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

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
        "Cross-Origin-Opener-Policy")},
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
    }
    assert got["login_frame"] == "DENY"
    assert got["csrf_cookie"] == {"secure": True, "httponly": True, "samesite": "Lax"}
    assert got["http_redirect"] == [301, "https://testserver/admin/login/"]


def test_development_responses_also_deny_framing_and_sniffing(client, db):
    response = client.get("/admin/login/")
    assert (response["X-Frame-Options"], response["X-Content-Type-Options"], response["Referrer-Policy"]) == (
        "DENY", "nosniff", "same-origin")

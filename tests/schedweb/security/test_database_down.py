"""With the database unreachable the app answers 503 with a clear body, never a 500.

Each case runs in a subprocess whose DATABASE_URL points at a closed local port (a real
connection refusal, no mocked driver)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, django
django.setup()
from django.test import Client
from django.db import connection
client = Client(raise_request_exception=False)
out = {}
attempts = []
connect = connection.get_new_connection
def counted(params):
    attempts.append(1)
    return connect(params)
connection.get_new_connection = counted  # counts real attempts (each one is refused)
def hit(name, method, path, **kw):
    r = getattr(client, method)(path, **kw)
    out[name] = {"status": r.status_code, "type": r.get("Content-Type", ""),
                 "retry": r.get("Retry-After"), "body": r.content.decode()[:500]}
hit("api_token", "get", "/api/v1/queues/", HTTP_AUTHORIZATION="Token swt_whatever")
out["api_token"]["attempts"] = len(attempts)
hit("api_post", "post", "/api/v1/nodes/", data={"name": "n"}, content_type="application/json",
    HTTP_AUTHORIZATION="Token swt_whatever")
hit("admin_login", "post", "/admin/login/", data={"username": "a", "password": "b"})
hit("healthz", "get", "/healthz")
client.cookies["sessionid"] = "a-session-key-the-database-would-know"
hit("page", "get", "/")
hit("api_session", "get", "/api/v1/queues/")
print(json.dumps(out))
"""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: connections are refused


def run_probe() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTEST_VERSION")}
    env.update(DJANGO_SETTINGS_MODULE="schedweb.settings", SECRET_KEY="x" * 50, ALLOWED_HOSTS="testserver",
               DATABASE_URL=f"postgres://postgres@127.0.0.1:{closed_port()}/schedweb", REDIS_URL="")
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_database_down_gives_503_everywhere():
    got = run_probe()
    expected_api = {"error": {"code": "database_unavailable",
                              "message": "The database is unavailable right now; please retry shortly.",
                              "fields": {}}}
    # A read whose own new connection was refused is not retried (only a dropped one is).
    assert got["api_token"]["attempts"] == 1
    for name in ("api_token", "api_post", "api_session"):
        assert got[name]["status"] == 503, got[name]
        assert got[name]["type"] == "application/json" and got[name]["retry"] == "5"
        assert json.loads(got[name]["body"]) == expected_api
    for name in ("admin_login", "page"):
        assert got[name]["status"] == 503, got[name]
        assert got[name]["type"].startswith("text/plain")
        assert got[name]["body"] == "The database is unavailable right now; please retry shortly.\n"
    assert got["healthz"]["status"] == 503 and json.loads(got["healthz"]["body"])["database"] == "error"

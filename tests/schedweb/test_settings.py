"""Settings from the environment, checked in subprocesses (settings are read once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "db = settings.DATABASES['default']; "
    "print(json.dumps({'debug': settings.DEBUG, 'engine': db['ENGINE'], 'name': str(db['NAME']), "
    "'options': db.get('OPTIONS', {}), 'broker': settings.CELERY_BROKER_URL, "
    "'hosts': settings.ALLOWED_HOSTS, "
    "'period': settings.SCHEDULE_PERIOD, 'agent': settings.SIMULATED_AGENT, "
    "'key': settings.SECRET_KEY, 'storage': settings.STORAGES['staticfiles']['BACKEND'], "
    "'whitenoise': 'whitenoise.middleware.WhiteNoiseMiddleware' in settings.MIDDLEWARE}))"
)
CLEARED = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "SCHEDULE_PERIOD",
           "SIMULATED_AGENT", "PYTEST_VERSION", "DJANGO_SETTINGS_MODULE", "DATABASE_PREPARE_THRESHOLD",
           # set by the browser tests' conftest for Playwright; never present in a deployment
           "DJANGO_ALLOW_ASYNC_UNSAFE")


def run(args: list[str], module: str = "schedweb.settings", **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in CLEARED}
    clean.update(DJANGO_SETTINGS_MODULE=module, **env)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)


def probe(module: str = "schedweb.settings", **env: str) -> dict:
    result = run(["-c", PROBE], module, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_development_defaults():
    got = probe(DEBUG="1")
    assert got["debug"] is True and got["key"].startswith("django-insecure-")
    assert got["engine"] == "django.db.backends.sqlite3"
    assert got["name"] == str(ROOT / "var" / "schedweb.sqlite3")
    assert got["options"] == {"transaction_mode": "IMMEDIATE", "timeout": 20,
                              "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"}
    assert got["broker"] is None
    assert (got["period"], got["agent"]) == (2.0, False)
    assert got["hosts"] == ["127.0.0.1", "localhost", "[::1]"]
    assert got["whitenoise"] is True


def test_sqlite_journal_is_wal_with_a_busy_timeout(tmp_path):
    """Every SQLite connection: WAL (readers and the cycle's writes do not block each other) and
    a 20 s busy timeout (a writer waits for the lock instead of failing at once)."""
    code = ("import django; django.setup(); from django.db import connection; c = connection.cursor(); "
            "print(*(c.execute(f'PRAGMA {p}').fetchone()[0] for p in ('journal_mode', 'busy_timeout', "
            "'synchronous')))")
    result = run(["-c", code], DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["wal", "20000", "1"]  # synchronous 1 = NORMAL


def test_environment_overrides():
    got = probe(SECRET_KEY="k" * 60, DATABASE_URL="postgres://u:p@db:5432/x", REDIS_URL="redis://r:6379/1",
                ALLOWED_HOSTS="a.example, b.example", SCHEDULE_PERIOD="0.5", SIMULATED_AGENT="1")
    assert got["debug"] is False and got["key"] == "k" * 60
    assert (got["engine"], got["name"]) == ("django.db.backends.postgresql", "x")
    assert got["options"] == {"prepare_threshold": 1}  # the API's token statement stays prepared
    assert got["broker"] == "redis://r:6379/1"
    assert got["hosts"] == ["a.example", "b.example"]
    assert (got["period"], got["agent"]) == (0.5, True)
    assert got["storage"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"


def test_secret_key_required_without_debug():
    result = run(["-c", PROBE])
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_production_passes_check_deploy():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                 module="schedweb.settings_production",
                 SECRET_KEY="a-long-random-production-secret-key-0123456789-abcdefghijklmnop",
                 ALLOWED_HOSTS="schedweb.example.com", DATABASE_URL="sqlite:////tmp/schedweb-deploy-check.sqlite3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_requires_allowed_hosts():
    result = run(["-c", PROBE], module="schedweb.settings_production", SECRET_KEY="x" * 60)
    assert result.returncode != 0 and "ALLOWED_HOSTS must be set in production" in result.stderr


def test_production_allows_probe_hosts():
    got = probe("schedweb.settings_production", SECRET_KEY="x" * 60, ALLOWED_HOSTS="schedweb.example.com")
    assert got["hosts"] == ["schedweb.example.com", "127.0.0.1", "localhost"]
    assert got["debug"] is False


def test_prepared_statements_can_be_turned_off_for_a_pooler():
    got = probe(SECRET_KEY="k" * 60, DATABASE_URL="postgres://u:p@db:5432/x",
                DATABASE_PREPARE_THRESHOLD="off")
    assert got["options"] == {"prepare_threshold": None}

"""Secrets: API keys exist only as sha256 hashes (also after rotation); no private key or token
is committed to the repository."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from django.db import connection

from schedweb.api.models import ApiToken
from schedweb.api.services import token_authenticate, token_create, token_revoke, token_rotate

ROOT = Path(__file__).resolve().parents[3]

SECRET_PATTERNS = {
    "private key": re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY"),
    "schedweb api key": re.compile(r"\bswt_[A-Za-z0-9_-]{40,}"),
    "aws access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "github token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "slack token": re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    "password in url": re.compile(r"[a-z+]+://[^/\s:@]+:[^/\s@]{6,}@(?!db[:/]|localhost|127\.0\.0\.1)"),
    "django secret key": re.compile(r"SECRET_KEY\s*=\s*['\"](?!django-insecure-)[^'\"]{20,}['\"]"),
}
# Known, deliberate matches: the settings tests pass obviously fake keys. (The compose file's
# database URL interpolates ${POSTGRES_PASSWORD} from .env, which the pattern does not match.)
ALLOWED = {
    ("tests/schedweb/test_settings.py", "django secret key"),
}


def _table_text() -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        return repr(cursor.fetchall())


def test_raw_keys_never_reach_the_database(django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw")
    token, key = token_create(user=user, name="ci")
    assert key not in _table_text() and hashlib.sha256(key.encode()).hexdigest() in _table_text()
    new_key = token_rotate(token=token)
    stored = _table_text()
    assert new_key not in stored and key not in stored
    assert hashlib.sha256(key.encode()).hexdigest() not in stored  # the old hash is gone as well
    assert token_authenticate(raw_key=key) is None and token_authenticate(raw_key=new_key).pk == token.pk
    token_revoke(token=token)
    assert token_authenticate(raw_key=new_key) is None
    assert ApiToken.objects.get(pk=token.pk).revoked is not None  # kept for the audit trail


def test_no_secret_in_tracked_files():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    hits = []
    for name in filter(None, listed.decode().split("\0")):
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 2_000_000 or name.startswith("static/vendor/"):
            continue
        text = path.read_text(errors="ignore")
        hits += [f"{name}: {label}" for label, rx in SECRET_PATTERNS.items()
                 if rx.search(text) and (name, label) not in ALLOWED]
    assert hits == []


def test_the_secret_patterns_do_catch_secrets():
    # Split literals, so this file does not itself trip the scan of tracked files.
    samples = {
        "private key": "-----BEGIN RSA " + "PRIVATE KEY-----",
        "schedweb api key": "swt_" + "a" * 43,
        "aws access key": "AKIA" + "ABCDEFGHIJKLMNOP",
        "github token": "ghp_" + "A" * 36,
        "slack token": "xoxb" + "-1234567890-abc",
        "password in url": "postgres://admin:" + "hunter22@prod.example.com/db",
        "django secret key": "SECRET_KEY = " + '"k3y-that-is-long-enough-to-be-real"',
    }
    assert {label: bool(SECRET_PATTERNS[label].search(text)) for label, text in samples.items()} == \
        dict.fromkeys(samples, True)

"""Writes of the API app's own model (tokens). Cluster objects are written by schedweb.core.services."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from schedweb.api.models import ApiToken

KEY_PREFIX = "swt_"
# last_used is refreshed at most this often, so authenticated reads do not each write a row.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw_key: str) -> str:
    """sha256 hex digest of a raw token key (what the database stores)."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


def _new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


@transaction.atomic
def token_create(*, user, name: str, expires: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a token for `user`; returns it with the raw key, which is never stored."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["This field may not be blank."]})
    if ApiToken.objects.filter(user=user, name=name, revoked__isnull=True).exists():
        raise ValidationError({"name": [f"You already have an active token named {name!r}."]})
    if expires is not None and expires <= timezone.now():
        raise ValidationError({"expires": ["Must be in the future."]})
    raw = _new_key()
    token = ApiToken.objects.create(
        user=user, name=name, prefix=raw[: len(KEY_PREFIX) + 4], key_hash=hash_key(raw), expires=expires,
    )
    return token, raw


@transaction.atomic
def token_rotate(*, token: ApiToken) -> str:
    """Replace the key of an active token; the old key stops working at once. Returns the new key."""
    if token.revoked is not None:
        raise ValidationError({"token": ["A revoked token cannot be rotated."]})
    raw = _new_key()
    ApiToken.objects.filter(pk=token.pk).update(prefix=raw[: len(KEY_PREFIX) + 4], key_hash=hash_key(raw))
    token.refresh_from_db()
    return raw


@transaction.atomic
def token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke a token (kept for the audit trail, never usable again)."""
    if token.revoked is None:
        ApiToken.objects.filter(pk=token.pk).update(revoked=timezone.now())
        token.refresh_from_db()
    return token


def token_authenticate(*, raw_key: str) -> ApiToken | None:
    """The active, unexpired token with this key (with its user), or None; refreshes last_used."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=hash_key(raw_key), revoked__isnull=True)
        .first()
    )
    now = timezone.now()
    if token is None or (token.expires is not None and token.expires <= now):
        return None
    if token.last_used is None or now - token.last_used > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token

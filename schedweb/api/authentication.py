"""Token authentication: `Authorization: Token <key>` (or `Bearer <key>`), keys hashed at rest.

Every refused token is counted per client address (schedweb.api.throttling.BadTokenThrottle);
past the `bad_token` rate the answer is 429 with Retry-After instead of 401.
"""

from __future__ import annotations

from functools import cache

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from schedweb.api.cache import version_columns, version_digest
from schedweb.api.models import ApiToken
from schedweb.api.services import LAST_USED_RESOLUTION, hash_key, token_authenticate
from schedweb.api.throttling import bad_token_wait


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates portals and scripts by an ApiToken; listed first so anonymous requests get 401."""

    keywords = ("token", "bearer")

    def authenticate(self, request):
        """Return (user, token) for a valid key, None when no token header is present."""
        token, refused = check_token(request)
        if refused is not None:
            raise refusal(request, refused)
        return None if token is None else (token.user, token)

    def authenticate_header(self, request) -> str:
        """Makes DRF answer 401 (not 403) to unauthenticated requests."""
        return 'Token realm="api"'


KEYWORDS = ApiTokenAuthentication.keywords


def check_token(request) -> tuple[ApiToken | None, str | None]:
    """The one token check of the API (DRF's authenticator and schedweb.api.fastpath):
    (token, None) for a valid `Authorization: Token|Bearer <key>` of an active user; (None, None)
    without such a header (another authenticator may apply); (None, why) for a refused one."""
    header = authentication.get_authorization_header(request).split()
    if not header or header[0].decode(errors="replace").lower() not in KEYWORDS:
        return None, None
    if len(header) != 2:
        return None, "Invalid token header: expected 'Token <key>'."
    try:
        raw = header[1].decode()
    except UnicodeError:
        return None, "Invalid token header: key is not ASCII."
    token = active_token(raw, request)
    if token is None or not token.user.is_active:
        return None, "Invalid, expired or revoked token."
    return token, None


def refusal(request, message: str) -> exceptions.APIException:
    """The error for a refused token: 401 `message`, or 429 once the client's address has passed
    the bad-token rate (each refusal counts)."""
    wait = bad_token_wait(request)
    if wait is None:
        return exceptions.AuthenticationFailed(message)
    return exceptions.Throttled(wait=wait, detail="Too many requests with an invalid token.")


@cache
def _token_sql(with_version: bool) -> tuple[str, list[str], list[str]]:
    user_model = get_user_model()
    token_cols = [f.attname for f in ApiToken._meta.concrete_fields]
    user_cols = [f.attname for f in user_model._meta.concrete_fields]
    quote = connection.ops.quote_name
    cols = [f"t.{quote(c)}" for c in token_cols] + [f"u.{quote(c)}" for c in user_cols]
    if with_version:
        cols.append(version_columns())
    user_pk = quote(user_model._meta.pk.column)
    sql = (f"SELECT {', '.join(cols)} FROM {quote(ApiToken._meta.db_table)} t "
           f"INNER JOIN {quote(user_model._meta.db_table)} u ON u.{user_pk} = t.user_id "
           "WHERE t.key_hash = %s AND t.revoked IS NULL")
    return sql, token_cols, user_cols


def active_token(raw_key: str, request=None) -> ApiToken | None:
    """services.token_authenticate's rules (active, unexpired, last_used refreshed at most once a
    minute) in one fixed SQL statement on PostgreSQL: building the ORM query cost a third of a
    cached read. Other databases (their drivers return text dates) take the service itself.

    For a GET `request`, the same round trip reads the data version of schedweb.api.cache and
    leaves it on the request (a cached read then needs no other query).
    """
    if connection.vendor != "postgresql":
        return token_authenticate(raw_key=raw_key)
    with_version = request is not None and request.method == "GET"
    sql, token_cols, user_cols = _token_sql(with_version)
    connection.ensure_connection()
    # A server-side-binding cursor on Django's own connection (same adapters, same transaction),
    # so the statement is prepared (settings: prepare_threshold), which Django's cursors never
    # are; wrapped as Django wraps its own (error mapping, execute wrappers, query log).
    raw = psycopg.Cursor(connection.connection)
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    with wrap(raw) as cur:
        cur.execute(sql, [hash_key(raw_key)])
        row = cur.fetchone()  # key_hash is unique
    if row is None:
        return None
    token = ApiToken.from_db(connection.alias, token_cols, row[: len(token_cols)])
    split = len(token_cols) + len(user_cols)
    token.user = get_user_model().from_db(connection.alias, user_cols, row[len(token_cols):split])
    if with_version:
        django_request = getattr(request, "_request", request)
        django_request.api_data_version = version_digest(row[split:])
    now = timezone.now()
    if token.expires is not None and token.expires <= now:
        return None
    if token.last_used is None or now - token.last_used > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token

"""The request being served, for audit entries: actor fallback, token name, request id and IP.

AuditContextMiddleware stores the request in a context variable for the duration of the request;
services called outside a request (scheduler loop, management commands) see no request and are
recorded as "system" unless they pass an actor.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
# A client-supplied request id is kept only when it is short and harmless (it goes into logs).
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")

_current: ContextVar[HttpRequest | None] = ContextVar("schedweb_audit_request", default=None)


@dataclass(frozen=True)
class RequestInfo:
    """What an audit entry records about the request that caused a change."""

    user: object | None
    token_name: str
    request_id: str
    ip: str | None


def current_request_info() -> RequestInfo | None:
    """The current request's audit facts, or None outside a request."""
    request = _current.get()
    if request is None:
        return None
    user = getattr(request, "user", None)
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    # DRF copies the authenticator's `auth` (our ApiToken) onto the Django request.
    token = getattr(request, "auth", None)
    token_name = getattr(token, "name", "") if token is not None else ""
    return RequestInfo(user=user, token_name=str(token_name or "")[:100],
                       request_id=getattr(request, "request_id", ""),
                       ip=request.META.get("REMOTE_ADDR") or None)


class AuditContextMiddleware:
    """Gives every request an id (the client's X-Request-ID when safe, else a new one), echoes it
    in the response, and exposes the request to audit records made while it is served."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Serve the request with the context variable set, then reset it."""
        given = request.headers.get(REQUEST_ID_HEADER, "")
        request.request_id = given if _SAFE_REQUEST_ID.match(given) else uuid.uuid4().hex
        reset = _current.set(request)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(reset)
        response.headers.setdefault(REQUEST_ID_HEADER, request.request_id)
        return response

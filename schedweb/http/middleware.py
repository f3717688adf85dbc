"""Request guards that must answer cleanly instead of failing with a 500:

- DatabaseUnavailableMiddleware: a lost database (OperationalError/InterfaceError) is a 503;
- RequestSizeLimitMiddleware: a body above DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 before any
  parser reads it (DRF's parsers read the raw stream, which Django does not limit).

Under /api/ the answers use the API's error envelope {"error": {"code", "message", "fields"}};
elsewhere a short plain-text page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
DATABASE_RETRY_AFTER = 5  # seconds: a restarting database is usually back within a few
RETRY_METHODS = ("GET", "HEAD", "OPTIONS")  # safe to run twice: they change nothing


def error_response(request: HttpRequest, status: int, code: str, message: str,
                   headers: dict[str, str] | None = None) -> HttpResponse:
    """The API error envelope under /api/ (or for JSON clients), else a plain-text page."""
    accept = request.headers.get("Accept", "")
    wants_json = request.path.startswith(API_PREFIX) or "application/json" in accept
    if wants_json:
        response: HttpResponse = JsonResponse({"error": {"code": code, "message": message, "fields": {}}},
                                              status=status)
    else:
        response = HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")
    for name, value in (headers or {}).items():
        response[name] = value
    return response


class DatabaseUnavailableMiddleware:
    """Maps database connection errors raised by a view to 503 database_unavailable."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Pass through (the mapping happens in process_exception), retrying a read once when
        the persistent connection it started with turns out dead: they get no per-request health
        check (settings), so the first query after a database restart is what finds a dropped
        one. A connection made for this request that failed is not retried (the database is down)."""
        reused = connection.connection is not None
        response = self.get_response(request)
        if (reused and getattr(request, "_database_unavailable", False) and request.method in RETRY_METHODS
                and not connection.in_atomic_block and not connection.is_usable()):
            connection.close()
            request._database_unavailable = False
            response = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A 503 for OperationalError/InterfaceError; any other exception stays a 500."""
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        request._database_unavailable = True
        logger.error("database unavailable while serving %s %s: %s", request.method, request.path, exception)
        return error_response(request, 503, "database_unavailable",
                              "The database is unavailable right now; please retry shortly.",
                              {"Retry-After": str(DATABASE_RETRY_AFTER)})


class RequestSizeLimitMiddleware:
    """413 payload_too_large for a Content-Length above settings.DATA_UPLOAD_MAX_MEMORY_SIZE."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Refuse oversized bodies before anything reads them."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django reads a malformed length as an empty body
        if limit is not None and length > limit:
            return error_response(request, 413, "payload_too_large", f"The request body ({length} bytes) "
                                  f"is larger than the limit of {limit} bytes.")
        return self.get_response(request)

"""RequestGuardMiddleware: a URL path, query parameter or looked-up header with a NUL byte, another
control character or an unpaired surrogate is a 400 before any view runs.

Views look such text up in the database (`/api/v1/queues/%00/`, `?namespace=%00`), where
PostgreSQL refuses NUL with an error that used to surface as a 500. The rules are
scheduler_core.shapes.check_text (one line, no control characters). Under /api/ the answer is
the API's error envelope with the offending part as the field (`path`, the parameter's name, or
the header's name); elsewhere a plain-text 400 page. Bodies are checked by the services.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from scheduler_core.shapes import ShapeError, check_text

API_PREFIX = "/api/"
# Headers whose value reaches a database lookup or is stored (tokens, idempotency keys).
CHECKED_HEADERS = ("Authorization", "Idempotency-Key")
_LIMIT = 1 << 20  # no single part of a URL is this long (Django caps the body, not the URL)


def problem(request: HttpRequest) -> tuple[str, str] | None:
    """(field, message) of the first bad part of the request line or checked headers, or None."""
    try:
        check_text(request.path_info, "path", max_length=_LIMIT)
        for name, values in request.GET.lists():
            check_text(name, "query", max_length=_LIMIT)
            for value in values:
                check_text(value, name, max_length=_LIMIT)
        for header in CHECKED_HEADERS:
            value = request.headers.get(header)
            if value is not None:
                check_text(value, header, max_length=_LIMIT)
    except ShapeError as exc:
        return exc.path, exc.message
    return None


class RequestGuardMiddleware:
    """400 `invalid_request` for control characters or lone surrogates in the path, the query or
    a checked header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer 400 for a bad request line, else go on."""
        found = problem(request)
        if found is None:
            return self.get_response(request)
        field, message = found
        where = {"path": "the URL path", "query": "query parameter names"}.get(field, repr(field))
        text = f"Bad request: {message} in {where}."
        if request.path_info.startswith(API_PREFIX):
            return JsonResponse({"error": {"code": "invalid_request", "message": text,
                                           "fields": {field: [message]}}}, status=400)
        return HttpResponse(f"{text}\n", status=400, content_type="text/plain; charset=utf-8")

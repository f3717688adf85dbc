"""One error body everywhere: {"error": {"code", "message", "fields": {field: [messages]}}}."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from schedweb.core.job_submission import JobExists
from schedweb.core.queue_locks import QueueChanged

# Service errors that mean "collides with what exists now": 409 `conflict`, not 400.
CONFLICTS = (JobExists, QueueChanged)

NON_FIELD = "non_field_errors"
_SURROGATE = re.compile("[\ud800-\udfff]")


class IdempotencyKeyReused(exceptions.APIException):
    """409: an Idempotency-Key seen before with a different request body (as payment APIs do)."""

    status_code = 409
    default_code = "idempotency_key_reused"
    default_detail = "Idempotency-Key already used with a different request body."
    field = "Idempotency-Key"


class Conflict(exceptions.APIException):
    """409 `conflict`: the request collides with what exists (a job of that namespace and name);
    `fields` names each field, as a validation error does."""

    status_code = 409
    default_code = "conflict"
    default_detail = "Conflicts with an existing object."

    def __init__(self, fields: dict[str, list[str]], message: str | None = None) -> None:
        super().__init__(message or _message(fields, self.default_detail))
        self.fields = fields


def sanitize(value: Any) -> Any:
    """`value` with every unpaired surrogate (keys included) replaced by U+FFFD, so the JSON
    renderer (UTF-8) can always encode what an error message echoes back."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {sanitize(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitize(v) for v in value]
    return value


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Flatten DRF's nested error detail into {"tasks[1].request": ["..."]} paths."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if not prefix:
                path = str(key)
            elif key == NON_FIELD:
                path = prefix
            elif isinstance(key, int) or str(key).isdigit():
                path = f"{prefix}[{key}]"  # DRF reports list items as {index: errors}
            else:
                path = f"{prefix}.{key}"
            for k, v in flatten_errors(value, path).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(detail, list):
        if all(not isinstance(v, dict | list) for v in detail):
            if detail:
                out.setdefault(prefix or NON_FIELD, []).extend(str(v) for v in detail)
        else:
            for i, value in enumerate(detail):
                for k, v in flatten_errors(value, f"{prefix}[{i}]").items():
                    out.setdefault(k, []).extend(v)
    elif detail not in (None, ""):
        out.setdefault(prefix or NON_FIELD, []).append(str(detail))
    return out


def django_validation_error_fields(exc: DjangoValidationError) -> dict[str, list[str]]:
    """Field messages of a service ValidationError ({field: [message]} or a plain message list)."""
    if hasattr(exc, "error_dict"):
        return {("non_field_errors" if k == "__all__" else k): list(v) for k, v in exc.message_dict.items()}
    return {NON_FIELD: list(exc.messages)}


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict:
    """The error envelope shared by every endpoint."""
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _message(fields: dict[str, list[str]], default: str) -> str:
    for field, messages in fields.items():
        if messages:
            return messages[0] if field == NON_FIELD else f"{field}: {messages[0]}"
    return default


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF EXCEPTION_HANDLER: service, Django and DRF errors all become the one envelope."""
    if isinstance(exc, CONFLICTS):
        exc = Conflict(django_validation_error_fields(exc))
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(django_validation_error_fields(exc))
    elif isinstance(exc, ProtectedError):
        exc = exceptions.ValidationError({NON_FIELD: [f"Still referenced by {len(exc.protected_objects)} "
                                                      "object(s); remove them first."]})
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # a real server error: let Django's 500 handling (and logging) see it
    assert isinstance(exc, exceptions.APIException)
    response.data = api_error_body(exc)
    return response


def api_error_body(exc: exceptions.APIException) -> dict:
    """The envelope of an API exception (also per item of a batch answer), sanitized."""
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        body = error_body("invalid", _message(fields, "Invalid input."), fields)
    elif isinstance(exc, Conflict):
        body = error_body("conflict", str(exc.detail), exc.fields)
    else:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        message = str(exc.detail) if not isinstance(exc.detail, dict | list) else exc.default_detail
        field = getattr(exc, "field", None)
        body = error_body(str(code), message, {field: [message]} if field else None)
    return sanitize(body)


def as_api_exception(exc: Exception) -> exceptions.APIException:
    """A service, Django or DRF error as the API exception the handler would answer with."""
    if isinstance(exc, CONFLICTS):
        return Conflict(django_validation_error_fields(exc))
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(django_validation_error_fields(exc))
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        return exc
    raise exc


class NotFoundView(APIView):
    """Catch-all for unknown /api/ paths: 401 for anonymous requests, else a 404 envelope."""

    schema = None  # not an endpoint of the OpenAPI document

    def _not_found(self, request, *args, **kwargs):
        raise exceptions.NotFound("No such API endpoint.")

    get = post = put = patch = delete = head = options = _not_found

"""Shared view helpers: strict input validation and the request's queue access."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from schedweb.core.access import QueueAccess, queue_access


def validated(serializer_class: type[serializers.Serializer], request, *, partial: bool = False,
              context: dict | None = None) -> dict[str, Any]:
    """Validated request data (400 naming every bad field otherwise)."""
    data = request.data
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
    serializer = serializer_class(data=data, partial=partial, context={"request": request, **(context or {})})
    serializer.is_valid(raise_exception=True)
    if partial:
        # With partial=True DRF still fills defaults of absent fields; keep only what was sent.
        return {k: v for k, v in serializer.validated_data.items() if k in data}
    return dict(serializer.validated_data)


def access(request) -> QueueAccess:
    """The request user's queue ACL view."""
    return queue_access(request)

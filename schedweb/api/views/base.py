"""Shared view helpers: strict input validation, the request's queue access, one job by id or name."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import NotFound

from schedweb.core.access import QueueAccess, queue_access
from schedweb.core.models import Job


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


def location(basename: str, key: Any) -> dict[str, str]:
    """The `Location` header of a 201: the created object's detail path (`api:<basename>-detail`),
    a relative reference as RFC 9110 allows, right behind any proxy."""
    from django.urls import reverse

    return {"Location": reverse(f"api:{basename}-detail", args=[key])}


def access(request) -> QueueAccess:
    """The request user's queue ACL view."""
    return queue_access(request)


def job_by_id(pk: int, fields: tuple[str, ...]) -> Job:
    """The job with this id, only `fields` loaded (404 otherwise, also past bigint)."""
    job = Job.objects.filter(pk=pk).only(*fields).first() if pk < 2**63 else None
    if job is None:
        raise NotFound(f"No job with id {pk}.")
    return job


def job_by_name(namespace: str, name: str, fields: tuple[str, ...]) -> Job:
    """The job namespace/name, only `fields` loaded (404 otherwise)."""
    job = Job.objects.filter(namespace=namespace, name=name).only(*fields).first()
    if job is None:
        raise NotFound(f"No job {namespace}/{name}.")
    return job

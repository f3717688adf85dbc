"""Shared serializer pieces: strict input (unknown keys are errors) and resource map fields."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from schedweb.api.units import to_api


class StrictSerializer(serializers.Serializer):
    """A serializer that rejects keys it does not know, naming them (typos must not pass silently)."""

    def to_internal_value(self, data: Any) -> Any:
        """Reject unknown keys, then validate as usual."""
        if isinstance(data, dict):
            writable = {name for name, f in self.fields.items() if not f.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        return super().to_internal_value(data)

    def create(self, validated_data):  # pragma: no cover - writes go through services
        """Not used: writes go through schedweb.core.services."""
        raise NotImplementedError("API serializers only validate; views call schedweb.core.services")

    def update(self, instance, validated_data):  # pragma: no cover - writes go through services
        """Not used: writes go through schedweb.core.services."""
        raise NotImplementedError("API serializers only validate; views call schedweb.core.services")


@extend_schema_field({"type": "object", "additionalProperties": {"oneOf": [{"type": "string"},
                                                                          {"type": "number"}]},
                      "example": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}})
class ResourceField(serializers.Field):
    """A resource map. Input: Kubernetes quantities (parsed by the services); output: cpu in
    cores, memory in bytes, scalars in their units (numbers, valid as input again)."""

    def to_internal_value(self, data: Any) -> dict[str, str | int | float]:
        """Check it is a {name: quantity} map; the services parse the quantities."""
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected an object of resource name -> quantity.")
        for key, value in data.items():
            if not isinstance(key, str) or not key:
                raise serializers.ValidationError("Resource names must be non-empty strings.")
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise serializers.ValidationError(
                    f"{key}: quantity must be a string or a number, not {value!r}.")
        return data

    def to_representation(self, value: Any) -> dict[str, int | float] | None:
        """Stored units to output units."""
        return to_api(value)


@extend_schema_field(OpenApiTypes.OBJECT)
class JSONObjectField(serializers.JSONField):
    """A JSON object (labels, selectors, annotations); lists and scalars are rejected."""

    def to_internal_value(self, data: Any) -> Any:
        """Parse as JSON and require an object."""
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Expected a JSON object.")
        return value


class StringMapField(serializers.DictField):
    """A {string: string} map (labels, node selectors)."""

    child = serializers.CharField(allow_blank=True)

"""The schema says what the API enforces (drf-spectacular postprocessing hook).

- Bodies of `StrictSerializer`s refuse unknown keys: their components get
  `additionalProperties: false`.
- Object names and namespaces are checked by schedweb.core.validation (`NAME`, `DNS_LABEL`):
  their `name` / `namespace` string properties get that `pattern`.

Clients and generated tests (schemathesis) then build valid bodies from the schema alone.
"""

from __future__ import annotations

from typing import Any

from schedweb.api.serializers.base import StrictSerializer
from schedweb.core.validation import DNS_LABEL, NAME

PATTERNS = {"name": NAME.pattern, "namespace": DNS_LABEL.pattern}


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _component_names(cls: type) -> set[str]:
    # drf-spectacular names a component after the class without its "Serializer" suffix; request
    # and partial-update variants get a prefix/suffix.
    base = cls.__name__.removesuffix("Serializer")
    return {base, f"{base}Request", f"Patched{base}", f"Patched{base}Request"}


def strict_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Mark strict components closed and give names / namespaces their patterns."""
    schemas = result.get("components", {}).get("schemas", {})
    strict = set().union(*(_component_names(c) for c in _subclasses(StrictSerializer)))
    for name, component in schemas.items():
        if name not in strict or component.get("type") != "object":
            continue
        component["additionalProperties"] = False
        for prop, pattern in PATTERNS.items():
            field = component.get("properties", {}).get(prop)
            writable_text = field and field.get("type") == "string" and not field.get("readOnly")
            if writable_text and "pattern" not in field:
                field["pattern"] = pattern
    return result

"""The schema says what the API enforces (drf-spectacular postprocessing hook).

- Bodies of `StrictSerializer`s refuse unknown keys: their components get
  `additionalProperties: false`.
- Object names and namespaces are checked by schedweb.core.validation (`NAME`, `DNS_LABEL`):
  their `name` / `namespace` string properties get that `pattern`.
- Input limits (README "Input limits"): a job's `tasks` get `maxItems` (MAX_TASKS_PER_JOB) and
  durations their 0..366 days range.

Clients and generated tests (schemathesis) then build valid bodies from the schema alone.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from scheduler_core.shapes import MAX_DURATION_SECONDS
from schedweb.api.serializers.base import StrictSerializer
from schedweb.core.validation import DNS_LABEL, NAME

PATTERNS = {"name": NAME.pattern, "namespace": DNS_LABEL.pattern, "scheduler_name": NAME.pattern}
SECONDS = {"minimum": 0, "maximum": MAX_DURATION_SECONDS}


def _limits() -> dict[tuple[str, str], dict[str, Any]]:
    """(component base name, property) -> schema keywords the services enforce."""
    return {("JobSubmit", "tasks"): {"maxItems": int(getattr(settings, "MAX_TASKS_PER_JOB", 10_000))},
            ("JobSubmit", "sla_waiting_time"): SECONDS, ("TaskInput", "duration"): SECONDS}


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _component_names(cls: type) -> set[str]:
    # drf-spectacular names a component after the class without its "Serializer" suffix; request
    # and partial-update variants get a prefix/suffix.
    return _names(cls.__name__.removesuffix("Serializer"))


def _names(base: str) -> set[str]:
    return {base, f"{base}Request", f"Patched{base}", f"Patched{base}Request"}


def strict_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Mark strict components closed and give names / namespaces their patterns."""
    schemas = result.get("components", {}).get("schemas", {})
    strict = set().union(*(_component_names(c) for c in _subclasses(StrictSerializer)))
    for (base, prop), keywords in _limits().items():
        for name in _names(base):
            field = schemas.get(name, {}).get("properties", {}).get(prop)
            if field is not None:
                field.update(keywords)
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

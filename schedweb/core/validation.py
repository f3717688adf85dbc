"""Input checks shared by the write services: resource maps, label maps, taints, tolerations.

Every check raises django.core.exceptions.ValidationError({path: [message]}) naming the field or
the element inside it (`tasks[0].affinity.nodeAffinity`). Kubernetes shapes and text rules come
from scheduler_core.shapes (the one validator the scenario loader and the scheduler use too);
quantities are parsed only by scheduler_core.resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError

from scheduler_core import shapes
from scheduler_core.shapes_names import SUBDOMAIN_PATTERN

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
DEFAULT_NODE_PODS = 110  # the kubelet default when allocatable has no `pods`
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Names of queues, nodes, jobs, tasks, priority classes: Kubernetes DNS-1123 subdomains
# (scheduler_core.shapes_names; the schema's `name` pattern is this one).
NAME = re.compile(f"^{SUBDOMAIN_PATTERN}$")


def fail(field: str, message: str) -> ValidationError:
    """The ValidationError every service raises: one field, one message."""
    return ValidationError({field: [message]})


def shape(check: Callable[..., Any], value: Any, field: str, **kwargs: Any) -> Any:
    """Run a scheduler_core.shapes check; its ShapeError becomes a ValidationError on its path."""
    try:
        return check(value, field, **kwargs)
    except shapes.ShapeError as exc:
        raise fail(exc.path, exc.message) from None


def check_storable(value: Any, field: str) -> Any:
    """Refuse NUL and other control characters and lone surrogates anywhere in a JSON value (keys
    included; newlines and tabs allowed in values), and nesting deeper than shapes.MAX_DEPTH.
    PostgreSQL text/jsonb cannot store NUL and UTF-8 cannot encode a surrogate ("\\ud800" is
    valid JSON), so both would otherwise fail at the database instead of here."""
    return shape(shapes.check_json_text, value, field)


def check_text(value: Any, field: str, *, multiline: bool = False, max_length: int = shapes.MAX_TEXT,
               blank: bool = True) -> str:
    """A free-text string (descriptions, comments, roles, YAML): no control characters except
    tab/newline when `multiline`, no lone surrogates; None is ""."""
    if value is None:
        value = ""
    shape(shapes.check_text, value, field, multiline=multiline, max_length=max_length)
    if not blank and not value:
        raise fail(field, "This field is required.")
    return value


def check_name(value: Any, field: str = "name", *, max_length: int = 253) -> str:
    """A Kubernetes object name: a DNS-1123 subdomain (lower-case letters, digits, '-', '.')."""
    if not isinstance(value, str) or not value:
        raise fail(field, "This field is required (a non-empty name).")
    return shape(shapes.check_subdomain_name, value, field, what="Name", max_length=max_length)


def check_pod_name(value: Any, field: str) -> str:
    """A task's (pod's) name: a DNS-1123 subdomain of at most 63 characters."""
    if not isinstance(value, str) or not value:
        raise fail(field, "This field is required (a non-empty name).")
    return shape(shapes.check_pod_name, value, field, what="Task name")


def check_task_entry_name(value: Any, field: str) -> str:
    """The name of a task entry with `replicas` (Volcano's task name): a DNS-1123 label."""
    if not isinstance(value, str) or not value:
        raise fail(field, "This field is required (a non-empty name).")
    return shape(shapes.check_label_name, value, field, what="Task name")


def check_namespace(value: Any, field: str = "namespace") -> str:
    """A Kubernetes namespace: a DNS label of at most 63 characters."""
    if isinstance(value, str):
        shape(shapes.check_text, value, field, max_length=253)
    if not isinstance(value, str) or not value or len(value) > 63 or not DNS_LABEL.match(value):
        raise fail(field, f"Namespace {value!r} must be a DNS label: lower-case letters, digits and '-'.")
    return value


# A node's pod count is stored as a plain integer (numpy int arrays in the scheduler).
MAX_PODS = 2**31 - 1


def _quantity(key: str, raw: Any, field: str, whole_extended: bool = False) -> float:
    """One quantity in stored units: finite, non-negative, at most 2^63-1 stored units."""
    from scheduler_core.resources import QuantityError, admit_quantity

    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise fail(field, f"{key}: quantity must be a string or a number, not {raw!r}.")
    if isinstance(raw, str):
        shape(shapes.check_text, raw, field, max_length=256)
    try:
        amount = admit_quantity(key, raw, allow_negative=True, whole_extended=whole_extended)
    except QuantityError as exc:
        raise fail(field, str(exc)) from None
    if amount < 0:
        shown = raw if isinstance(raw, str) else str(int(raw)) if float(raw).is_integer() else repr(raw)
        raise fail(field, f"{key}: quantity must not be negative, got {shown!r}.")
    return amount


def parse_resources(value: Any, field: str, *, node: bool = False,
                    pod: bool = False) -> dict[str, float] | None:
    """Quantities ({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}) to stored units.

    None stays None (unset). Names are Kubernetes qualified names; every amount is finite and at
    most 2^63-1 in stored units (milli-cpu, bytes, milli-units: Kubernetes' int64). Node
    allocatable (`node=True`) keeps `pods` as a whole count (default 110, at most 2^31-1);
    elsewhere `pods` is accepted and ignored, like Volcano's queue resources. Quantities are
    rounded up to the smallest stored unit as Kubernetes does; a node's or a pod's (`pod=True`: a
    task's request) extended resources must be whole numbers, as Kubernetes requires.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(field, "Expected an object of resource name -> quantity, e.g. {\"cpu\": \"2\"}.")
    stored: dict[str, float] = {}
    pods: float | None = None
    for key, raw in value.items():
        if not isinstance(key, str) or not key.strip():
            raise fail(field, f"Resource names must be non-empty strings, not {key!r}.")
        try:
            shapes.check_resource_name(key, field)
        except shapes.ShapeError as exc:
            raise fail(field, f"Bad resource name: {exc.message}") from None
        amount = _quantity(key, raw, field, whole_extended=node or pod)
        if key == "pods":
            if not float(amount).is_integer() or amount > MAX_PODS:
                raise fail(field, f"pods: must be a whole number between 0 and {MAX_PODS}, got {raw!r}.")
            pods = amount
            continue
        # Keep only the dimensions the user gave: a capability of {cpu: 20} must not read back
        # as "memory: 0" in the API and the dashboard (the scheduler treats both as unlimited).
        stored[key] = amount
    stored = {key: stored[key] for key in sorted(stored, key=lambda k: (k not in ("cpu", "memory"), k))}
    if node:
        stored["pods"] = int(pods) if pods is not None else DEFAULT_NODE_PODS
    return stored


def resources_for_input(stored: dict[str, Any] | None) -> dict[str, int | float] | None:
    """Stored units back to input units (cpu cores, memory bytes, scalars in units, pods count),
    so an edit form can show a map that parses back to the same stored value."""
    if stored is None:
        return None
    out: dict[str, int | float] = {}
    for key in sorted(stored):
        value = float(stored[key])
        if key not in ("memory", "pods"):
            value = round(value / 1000, 6)
        out[key] = int(value) if value.is_integer() else value
    return out


def check_string_map(value: Any, field: str) -> dict[str, str]:
    """Labels or a node selector: Kubernetes qualified-name keys to label values; None is {}."""
    return dict(shape(shapes.check_labels, value, field))


def check_object(value: Any, field: str, *, nullable: bool = False) -> dict | None:
    """A free-form JSON object (annotations); None is {} unless `nullable`."""
    if value is None:
        return None if nullable else {}
    if not isinstance(value, dict):
        raise fail(field, "Expected a JSON object.")
    return check_storable(value, field)


def check_affinity(value: Any, field: str) -> dict | None:
    """A pod's Kubernetes Affinity (None or {} = none)."""
    return shape(shapes.check_affinity, value, field) or None


def check_topology_spread_constraints(value: Any, field: str) -> list[dict]:
    """A pod's topologySpreadConstraints (None is [])."""
    return list(shape(shapes.check_topology_spread_constraints, value, field))


def check_taints(value: Any, field: str = "taints") -> list[dict[str, str]]:
    """Node taints as Kubernetes validates them (scheduler_core.shapes.check_taints): qualified-name
    keys, label values, a known effect, an optional RFC 3339 `timeAdded`, unique by key and effect."""
    return shape(shapes.check_taints, value, field)


def check_tolerations(value: Any, field: str) -> list[dict]:
    """Pod tolerations, as Kubernetes validates them (None is [])."""
    return list(shape(shapes.check_tolerations, value, field))


# Every integer the services store lands in a 32-bit column (PostgreSQL `integer`): a value
# outside it must be a 400, not a DataError ("integer out of range") at INSERT time.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def check_int(value: Any, field: str, *, minimum: int | None = None, nullable: bool = False) -> int | None:
    """An integer (not a bool) within 32 bits, optionally at least `minimum`."""
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(field, f"Expected a whole number, not {value!r}.")
    if minimum is not None and value < minimum:
        raise fail(field, f"Must be at least {minimum}, got {value}.")
    if not INT32_MIN <= value <= INT32_MAX:
        raise fail(field, f"Must be between {INT32_MIN} and {INT32_MAX}, got {value}.")
    return value


def check_seconds(value: Any, field: str) -> float | None:
    """A number of seconds, finite, between 0 and shapes.MAX_DURATION_SECONDS (366 days); None
    stays None."""
    return shape(shapes.check_duration, value, field)


def check_choice(value: Any, field: str, choices: tuple[str, ...] | list[str]) -> str:
    """One of `choices`."""
    if not isinstance(value, str) or value not in choices:
        shown = value if isinstance(value, str | int | float | None) else type(value).__name__
        if isinstance(shown, str):
            shown = shown.encode("utf-8", "replace").decode("utf-8")[:100]
        raise fail(field, f"{shown!r} is not one of {', '.join(choices)}.")
    return value


def check_name_list(value: Any, field: str) -> list[str]:
    """A list of distinct object names (a NodeShard's node lists); None is []."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise fail(field, "Expected a list of names.")
    seen: set[str] = set()
    for i, name in enumerate(value):
        check_name(name, f"{field}[{i}]")
        if name in seen:
            raise fail(f"{field}[{i}]", f"Duplicate name {name!r}.")
        seen.add(name)
    return list(value)


def check_fraction(value: Any, field: str) -> float:
    """A finite number from 0 to 1 (a utilisation band's end)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise fail(field, f"Expected a number from 0 to 1, not {value!r}.")
    return float(value)

"""Input checks shared by the write services: resource maps, label maps, taints, tolerations.

Every check raises django.core.exceptions.ValidationError({field: [message]}) naming the field.
Quantities are parsed only by scheduler_core.resources (imported lazily, so this module stays
importable while that package evolves).
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
DEFAULT_NODE_PODS = 110  # the kubelet default when allocatable has no `pods`
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Names of queues, nodes, jobs, tasks, priority classes: no blanks or slashes (the scheduler key
# of a task is "namespace/name").
NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def fail(field: str, message: str) -> ValidationError:
    """The ValidationError every service raises: one field, one message."""
    return ValidationError({field: [message]})


def check_storable(value: Any, field: str) -> Any:
    """Refuse NUL characters and lone surrogates anywhere in a JSON value (keys included):
    PostgreSQL text/jsonb cannot store NUL and UTF-8 cannot encode a surrogate ("\\ud800" is
    valid JSON), so both would otherwise fail at the database instead of here."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise fail(field, "Null characters are not allowed.")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise fail(field, "Surrogate characters are not allowed.") from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


def check_name(value: Any, field: str = "name", *, max_length: int = 253) -> str:
    """A non-empty object name of letters, digits, '-', '_' and '.'."""
    if not isinstance(value, str) or not value:
        raise fail(field, "This field is required (a non-empty name).")
    if len(value) > max_length:
        raise fail(field, f"Name {value!r} is longer than {max_length} characters.")
    if not NAME.match(value):
        raise fail(field, f"Name {value!r} may contain only letters, digits, '-', '_' and '.', "
                          "and must start and end with a letter or digit.")
    return value


def check_namespace(value: Any, field: str = "namespace") -> str:
    """A Kubernetes namespace: a DNS label of at most 63 characters."""
    if not isinstance(value, str) or not value or len(value) > 63 or not DNS_LABEL.match(value):
        raise fail(field, f"Namespace {value!r} must be a DNS label: lower-case letters, digits and '-'.")
    return value


def _quantity_text(key: str, raw: Any, field: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise fail(field, f"{key}: quantity must be a string or a number, not {raw!r}.")
    if isinstance(raw, float):
        return str(int(raw)) if raw.is_integer() else format(raw, "f").rstrip("0")
    return str(raw)


def parse_resources(value: Any, field: str, *, node: bool = False) -> dict[str, float] | None:
    """Quantities ({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}) to stored units.

    None stays None (unset). Node allocatable (`node=True`) keeps `pods` as a plain count
    (default 110); elsewhere `pods` is accepted and ignored, like Volcano's queue resources.
    """
    from scheduler_core.resources import QuantityError, Resource, parse_quantity

    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(field, "Expected an object of resource name -> quantity, e.g. {\"cpu\": \"2\"}.")
    check_storable(list(value), field)
    quantities: dict[str, str] = {}
    pods: float | None = None
    for key, raw in value.items():
        if not isinstance(key, str) or not key.strip():
            raise fail(field, f"Resource names must be non-empty strings, not {key!r}.")
        text = _quantity_text(key, raw, field)
        try:
            amount = parse_quantity(text, allow_negative=True)
        except QuantityError as exc:
            raise fail(field, f"{key}: {exc}") from None
        if amount < 0:
            raise fail(field, f"{key}: quantity must not be negative, got {text!r}.")
        if key == "pods":
            if not float(amount).is_integer():
                raise fail(field, f"pods: must be a whole number, got {text!r}.")
            pods = amount
            continue
        quantities[key] = text
    try:
        stored = Resource.from_quantities(quantities).to_canonical()
    except (QuantityError, ValueError) as exc:
        raise fail(field, str(exc)) from None
    # Keep only the dimensions the user gave: a capability of {cpu: 20} must not read back
    # as "memory: 0" in the API and the dashboard (the scheduler treats both as unlimited).
    stored = {key: amount for key, amount in stored.items() if key in quantities}
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
    """A {string: string} map (labels, node selectors); None means empty."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                              for k, v in value.items()):
        raise fail(field, "Expected an object of non-empty string keys to string values.")
    return dict(check_storable(value, field))


def check_object(value: Any, field: str, *, nullable: bool = False) -> dict | None:
    """A JSON object (annotations, affinity); None is {} unless `nullable`."""
    if value is None:
        return None if nullable else {}
    if not isinstance(value, dict):
        raise fail(field, "Expected a JSON object.")
    return check_storable(value, field)


def check_taints(value: Any, field: str = "taints") -> list[dict[str, str]]:
    """Node taints: a list of {key, value, effect} with a known effect."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(field, "Expected a list of {key, value, effect} objects.")
    check_storable(value, field)
    taints = []
    for i, taint in enumerate(value):
        if not isinstance(taint, dict) or not isinstance(taint.get("key"), str) or not taint["key"]:
            raise fail(field, f"Taint {i}: expected an object with a non-empty key.")
        unknown = sorted(set(taint) - {"key", "value", "effect"})
        if unknown:
            raise fail(field, f"Taint {i}: unknown key(s) {', '.join(unknown)}.")
        if taint.get("effect") not in TAINT_EFFECTS:
            raise fail(field, f"Taint {i}: effect must be one of {', '.join(TAINT_EFFECTS)}, "
                              f"not {taint.get('effect')!r}.")
        if not isinstance(taint.get("value", ""), str):
            raise fail(field, f"Taint {i}: value must be a string.")
        taints.append({"key": taint["key"], "value": taint.get("value", ""), "effect": taint["effect"]})
    return taints


def check_tolerations(value: Any, field: str) -> list[dict]:
    """Pod tolerations: a list of objects ({key, operator, value, effect})."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise fail(field, "Expected a list of toleration objects.")
    check_storable(value, field)
    for i, tol in enumerate(value):
        if tol.get("operator", "Equal") not in TOLERATION_OPERATORS:
            raise fail(field, f"Toleration {i}: operator must be Equal or Exists.")
        if tol.get("effect") not in (None, "", *TAINT_EFFECTS):
            raise fail(field, f"Toleration {i}: effect must be one of {', '.join(TAINT_EFFECTS)}.")
    return value


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
    """A non-negative number of seconds, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise fail(field, f"Expected a non-negative number of seconds, not {value!r}.")
    return float(value)


def check_choice(value: Any, field: str, choices: tuple[str, ...] | list[str]) -> str:
    """One of `choices`."""
    if value not in choices:
        raise fail(field, f"{value!r} is not one of {', '.join(choices)}.")
    return value

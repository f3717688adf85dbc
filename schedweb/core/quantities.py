"""Stored resource maps (milli-cpu, bytes, milli-scalars) as Kubernetes quantity strings.

What a person writes and reads back: manifests export them and the edit forms show them, and
schedweb.core.validation.parse_resources parses each back to the same stored value.
"""

from __future__ import annotations

from typing import Any

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
# Counts, stored as plain numbers (not milli-units).
_COUNT_KEYS = frozenset({"pods"})


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _milli_quantity(milli: float) -> str:
    milli = round(milli, 3)
    if float(milli).is_integer() and int(milli) % 1000 == 0:
        return str(int(milli) // 1000)
    if float(milli).is_integer():
        return f"{int(milli)}m"
    return str(_num(milli / 1000))


def _memory_quantity(size: float) -> str:
    if float(size).is_integer():
        n = int(size)
        for suffix, factor in _BINARY:
            if n and n % factor == 0:
                return f"{n // factor}{suffix}"
        return str(n)
    return str(size)


def to_quantities(stored: dict[str, Any] | None) -> dict[str, str | int] | None:
    """Stored units to Kubernetes quantity strings for manifests ("500m", "4Gi", "2")."""
    if stored is None:
        return None
    out: dict[str, str | int] = {}
    for name in sorted(stored):
        value = float(stored[name])
        if name == "memory":
            out[name] = _memory_quantity(value)
        elif name in _COUNT_KEYS:
            out[name] = int(value)
        else:
            out[name] = _milli_quantity(value)
    return out

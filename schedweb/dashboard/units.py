"""Stored resource amounts (milli-cpu, bytes, milli-scalars) as people read them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

GIB = 2**30
# Dimensions every page shows first; scalar resources (GPUs...) follow in name order.
BASE_DIMS = ("cpu", "memory")
_LABELS = {"cpu": "CPU", "memory": "Memory", "nvidia.com/gpu": "GPU"}


def dims_of(maps: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """cpu, memory, then every other resource name present in `maps` (sorted; `pods` excluded)."""
    names: set[str] = set()
    for m in maps:
        names.update(k for k in (m or {}) if k != "pods")
    return [*BASE_DIMS, *sorted(names - set(BASE_DIMS))]


def dim_label(name: str) -> str:
    """A short label: CPU, Memory, GPU, or the scalar name itself."""
    return _LABELS.get(name, name)


def dim_unit(name: str) -> str:
    """The unit amounts of `name` are shown in (after `to_display`)."""
    if name == "cpu":
        return "cores"
    if name == "memory":
        return "GiB"
    return "GPUs" if name == "nvidia.com/gpu" else "units"


def to_display(name: str, stored: float | None) -> float | None:
    """A stored amount in display units: cores, GiB, whole scalars (None stays None)."""
    if stored is None:
        return None
    value = float(stored) / (GIB if name == "memory" else 1000)
    return round(value, 3)


def fmt(name: str, stored: float | None) -> str:
    """`12`, `0.5`, `768 GiB`, `8 GPUs`; an em dash for unknown."""
    value = to_display(name, stored)
    if value is None:
        return "\u2014"
    text = f"{value:,.1f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    if name == "memory":
        return f"{text} GiB"
    if name == "cpu":
        return text
    return f"{text} {dim_unit(name)}" if name == "nvidia.com/gpu" else text


def fmt_map(stored: Mapping[str, Any] | None) -> str:
    """`cpu 12, memory 64 GiB, GPU 4` for a resource map; `unset` for None."""
    if stored is None:
        return "unset"
    parts = [f"{dim_label(k).lower() if k in BASE_DIMS else dim_label(k)} {fmt(k, v)}"
             for k, v in sorted(stored.items(), key=lambda kv: _dim_order(kv[0])) if k != "pods"]
    return ", ".join(parts) if parts else "nothing"


def _dim_order(name: str) -> tuple[int, str]:
    return (BASE_DIMS.index(name), "") if name in BASE_DIMS else (len(BASE_DIMS), name)


def add_into(total: dict[str, float], stored: Mapping[str, Any] | None, times: float = 1) -> None:
    """total += stored * times, per resource name (pods excluded)."""
    for key, value in (stored or {}).items():
        if key != "pods":
            total[key] = total.get(key, 0.0) + float(value) * times


def percent(part: float | None, whole: float | None) -> float | None:
    """part / whole in percent (one decimal); None when either is unknown or whole is 0."""
    if part is None or not whole:
        return None
    return round(100.0 * float(part) / float(whole), 1)

"""Resource amounts as people read them: cores, GiB / TiB, GPUs, rounded to what the unit needs.

Three unit systems meet here. *Stored* units (milli-cpu, bytes, milli-scalars) are what the
database and QueueSample rows hold; *output* units (cpu cores, memory bytes, scalars in units)
are what the API and the scheduler's reason details carry (`from_output` converts them);
*display* units are what a page shows (`fmt`, `fmt_map`, `fmt_ratio`; charts use `to_display`
with a fixed unit per axis: cores, GiB, GPUs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

KIB = 2**10
GIB = 2**30
# Memory units, largest first: (suffix, bytes).
MEMORY_UNITS = (("TiB", 2**40), ("GiB", GIB), ("MiB", 2**20), ("KiB", KIB))
# Dimensions every page shows first; scalar resources (GPUs...) follow in name order.
BASE_DIMS = ("cpu", "memory")
GPU = "nvidia.com/gpu"
_LABELS = {"cpu": "CPU", "memory": "Memory", GPU: "GPU"}
# Scalars are stored in milli-units; cpu in milli-cores: three decimals is the unit's own precision.
MILLI_DECIMALS = 3
# Memory shown in a binary unit keeps two decimals at most (1.5 TiB, 28.5 GiB).
MEMORY_DECIMALS = 2


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
    """The unit a chart axis of `name` is drawn in (after `to_display`)."""
    if name == "cpu":
        return "cores"
    if name == "memory":
        return "GiB"
    return "GPUs" if is_gpu(name) else "units"


def is_gpu(name: str) -> bool:
    """nvidia.com/gpu, amd.com/gpu, gpu: counted as GPUs."""
    return name == "gpu" or name.endswith("/gpu")


def to_display(name: str, stored: float | None) -> float | None:
    """A stored amount in chart units: cores, GiB, whole scalars (None stays None)."""
    if stored is None:
        return None
    value = float(stored) / (GIB if name == "memory" else 1000)
    return round(value, 3)


def from_output(name: str, value: float | None) -> float | None:
    """An output-unit amount (cores, bytes, units: API and reason details) in stored units."""
    if value is None:
        return None
    return float(value) if name in ("memory", "pods") else float(value) * 1000


def output_map_to_stored(output: Mapping[str, Any] | None) -> dict[str, float] | None:
    """A whole output-unit map (API, reason details, explanations) in stored units; pods dropped."""
    if output is None:
        return None
    return {k: float(from_output(k, v) or 0.0) for k, v in output.items() if k != "pods" and v is not None}


def _number(value: float, decimals: int) -> str:
    """`1,024`, `0.5`, `12.25`: at most `decimals` decimals, no trailing zeros."""
    value = round(value, decimals)
    if value == 0:
        return "0"
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.{decimals}f}".rstrip("0").rstrip(".")


def memory_parts(stored: float) -> tuple[str, str]:
    """(number, unit) of a byte amount: the largest binary unit that shows it exactly to two
    decimals (1536 GiB -> 1.5 TiB, 2000 GiB stays 2,000 GiB), else the largest unit it fills."""
    size = float(stored)
    if size == 0:
        return "0", "GiB"
    usable = [(suffix, factor) for suffix, factor in MEMORY_UNITS if abs(size) >= factor]
    if not usable:
        return _number(size, 0), "bytes"
    for suffix, factor in usable:
        scaled = size / factor
        # Exact to the byte, and not a six-digit count of a small unit (976,562.5 KiB).
        if abs(scaled) < 100_000 and abs(round(scaled, MEMORY_DECIMALS) - scaled) * factor < 1:
            return _number(scaled, MEMORY_DECIMALS), suffix
    suffix, factor = usable[0]
    return _number(size / factor, MEMORY_DECIMALS), suffix


def parts(name: str, stored: float) -> tuple[str, str]:
    """(number, unit) of a stored amount: cores, a binary memory unit, GPUs, or the scalar name."""
    if name == "memory":
        return memory_parts(stored)
    value = float(stored) / 1000
    number = _number(value, MILLI_DECIMALS)
    if name == "cpu":
        return number, "core" if number == "1" else "cores"
    if is_gpu(name):
        return number, "GPU" if number == "1" else "GPUs"
    return number, name


def fmt(name: str, stored: float | None) -> str:
    """`12 cores`, `0.5 cores`, `768 GiB`, `1.5 TiB`, `8 GPUs`; an em dash for unknown."""
    if stored is None:
        return "\u2014"
    if math.isinf(float(stored)):
        return "unlimited"
    number, unit = parts(name, stored)
    return f"{number} {unit}"


def fmt_output(name: str, value: float | None) -> str:
    """`fmt` of an output-unit amount (API, reason details: cores, bytes, units)."""
    return fmt(name, from_output(name, value))


def fmt_ratio(name: str, part: float | None, whole: float | None) -> str:
    """`159 / 192 cores`, `873 GiB / 1.5 TiB`: the unit once when both sides share it."""
    if part is None or whole is None or math.isinf(float(part)) or math.isinf(float(whole)):
        return f"{fmt(name, part)} / {fmt(name, whole)}"
    (a, unit_a), (b, unit_b) = parts(name, part), parts(name, whole)
    if name == "cpu" or is_gpu(name):
        unit_a = unit_b = parts(name, 2000)[1]  # "cores" / "GPUs" after a ratio, whatever the count
    if unit_a == unit_b:
        return f"{a} / {b} {unit_b}"
    return f"{a} {unit_a} / {b} {unit_b}"


def fmt_map(stored: Mapping[str, Any] | None) -> str:
    """`12 cores, 64 GiB of memory, 4 GPUs` for a resource map; `unset` for None."""
    if stored is None:
        return "unset"
    out = []
    for key, value in sorted(stored.items(), key=lambda kv: _dim_order(kv[0])):
        if key == "pods" or value is None:
            continue
        text = fmt(key, value)
        out.append(f"{text} of memory" if key == "memory" else text)
    return ", ".join(out) if out else "nothing"


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

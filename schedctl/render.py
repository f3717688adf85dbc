"""Output: aligned tables (kubectl style), JSON and YAML, and the cell formats they share."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

OUTPUT_FORMATS = ("table", "json", "yaml")
NONE = "-"
# Binary suffixes for memory, largest first: 4Gi, 512Mi ("valid as input again").
_MEMORY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def utcnow() -> datetime:
    """The current time (a module function so tests can fix the clock behind AGE columns)."""
    return datetime.now(UTC)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns left-aligned with three spaces between them; upper-case headers; no trailing blanks."""
    grid = [[cell_text(h).upper() for h in headers], *([cell_text(c) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in grid) for i in range(len(headers))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in grid)


def cell_text(value: Any) -> str:
    """One table cell: None is `-`, line breaks and tabs become spaces (a row stays one line)."""
    if value is None or value == "":
        return NONE
    return " ".join(str(value).split())


def dump(data: Any, fmt: str) -> str:
    """`data` as JSON (indented, keys in API order) or YAML (block style)."""
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False).rstrip("\n")


def emit(data: Any, fmt: str, as_text: Callable[[Any], str]) -> None:
    """Print `data` in the chosen format; `as_text` renders the table form."""
    text = as_text(data) if fmt == "table" else dump(data, fmt)
    if text:
        sys.stdout.write(text + "\n")


def empty_notice(what: str) -> None:
    """kubectl's `No resources found.` for an empty table, on stderr so stdout stays parseable."""
    sys.stderr.write(f"No {what} found.\n")


def listing(items: list[dict], fmt: str, what: str, headers: Sequence[str],
            row: Callable[[dict], list[str]]) -> None:
    """A `<noun> list` answer: `items` in the chosen format; as a table, one `row(item)` each
    under `headers`, or the empty notice."""
    if not items and fmt == "table":
        empty_notice(what)
        return
    emit(items, fmt, lambda xs: table(headers, [row(x) for x in xs]))


# -- cell formats -----------------------------------------------------------------------------------

def number(value: Any) -> str:
    """An amount without a needless `.0` (4.0 -> `4`, 0.25 -> `0.25`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return cell_text(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def cpu(cores: Any) -> str:
    """CPU cores as a Kubernetes quantity: whole cores (`4`), else millicores (`500m`)."""
    if isinstance(cores, bool) or not isinstance(cores, int | float):
        return cell_text(cores)
    if float(cores).is_integer():
        return str(int(cores))
    milli = cores * 1000
    return f"{round(milli):d}m" if abs(milli - round(milli)) < 1e-6 else f"{cores:g}"


def memory(amount: Any) -> str:
    """Bytes with the largest binary suffix that divides them exactly (`4Gi`, `512Mi`), else bytes."""
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return cell_text(amount)
    if not float(amount).is_integer():
        return f"{amount:g}"
    whole = int(amount)
    for suffix, size in _MEMORY_UNITS:
        if whole and whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)


def quantity(name: str, amount: Any) -> str:
    """One resource amount in its usual notation (cpu, memory, or a plain number)."""
    if name == "cpu":
        return cpu(amount)
    if name == "memory":
        return memory(amount)
    return number(amount)


def resource_names(resources: Mapping[str, Any]) -> list[str]:
    """cpu, memory, then the other names in sorted order (the API's dimension order)."""
    head = [n for n in ("cpu", "memory") if n in resources]
    return head + sorted(n for n in resources if n not in ("cpu", "memory"))


def resources(value: Mapping[str, Any] | None, skip: Iterable[str] = ()) -> str:
    """`cpu=4,memory=8Gi,nvidia.com/gpu=2`; None (unset or unlimited) is `-`, an empty map `0`."""
    if value is None:
        return NONE
    if not isinstance(value, Mapping):
        return cell_text(value)
    skipped = set(skip)
    parts = [f"{n}={quantity(n, value[n])}" for n in resource_names(value) if n not in skipped]
    return ",".join(parts) or "0"


def parse_time(text: Any) -> datetime | None:
    """An API timestamp (ISO 8601, `Z` or an offset); None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def age(created: Any, now: datetime | None = None) -> str:
    """kubectl's short age: `45s`, `3m20s`, `42m`, `5h10m`, `20h`, `3d4h`, `12d` (`-` if unknown)."""
    start = parse_time(created)
    if start is None:
        return NONE
    seconds = max(int(((now or utcnow()) - start).total_seconds()), 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def percent(value: Any) -> str:
    """A usage percentage (`37.5%`), `-` when unreported."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NONE
    return f"{value:g}%"

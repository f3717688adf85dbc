"""An audit entry's diff as a person reads it: one row per changed field, amounts in human units.

Entries store snapshots in stored units (`{"cpu": 96000.0, "memory": 1649267441664.0}`), which is
what `GET /api/v1/audit/` documents. The log page shows them through `diff_rows`: a resource map
becomes one row per changed dimension ("capability: cpu", "96 cores" -> "128 cores"), a missing
dimension or map reads "unset", flags read yes / no, lists are joined, and a text of several
lines (a scheduler configuration's YAML) becomes a line diff (`DiffRow.lines`).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from schedweb.dashboard.units import dim_label, dims_of, fmt, fmt_map

# Fields holding a resource map in stored units, per audited object type ("*": any type).
RESOURCE_FIELDS: dict[str, frozenset[str]] = {
    "queue": frozenset({"capability", "deserved", "guarantee"}),
    "node": frozenset({"allocatable"}),
    "namespace_quota": frozenset({"hard"}),
}
DASH = "\u2014"


@dataclass(frozen=True)
class DiffRow:
    """One changed field (or one dimension of a changed resource map), before and after."""

    field: str
    before: str
    after: str
    # A multi-line text's change as (mark, line): "-" removed, "+" added, " " context; "@" a gap.
    lines: list[tuple[str, str]] = dataclass_field(default_factory=list)


def amount(dim: str, stored: Any) -> str:
    """One stored amount in human units (`96 cores`, `1.5 TiB`, `8 GPUs`, `110` pods)."""
    if stored is None:
        return "unset"
    if not isinstance(stored, int | float) or isinstance(stored, bool):
        return str(stored)
    if dim == "pods":
        return f"{stored:,.0f}"
    return fmt(dim, float(stored))


def value_text(value: Any) -> str:
    """Any other snapshot value: strings as they are, flags yes/no, lists joined, maps as JSON."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(value_text(v) for v in value) if value else "none"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return json.dumps(value, sort_keys=True)


def _resource_rows(field: str, before: Any, after: Any) -> list[DiffRow]:
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    if before is None or after is None:
        # Set or unset as a whole: one row, the map in words on the side that has it.
        return [DiffRow(field, _map_text(before), _map_text(after))]
    rows = []
    names = dims_of([old, new]) + (["pods"] if "pods" in old or "pods" in new else [])
    for dim in names:
        if old.get(dim) != new.get(dim):
            label = "pods" if dim == "pods" else dim_label(dim).lower() if dim in ("cpu", "memory") \
                else dim_label(dim)
            rows.append(DiffRow(f"{field}: {label}", amount(dim, old.get(dim)), amount(dim, new.get(dim))))
    return rows


CONTEXT_LINES = 2


def line_diff(before: str, after: str) -> list[tuple[str, str]]:
    """The changed lines of two texts with `CONTEXT_LINES` of context, unified-diff style."""
    rows: list[tuple[str, str]] = []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=CONTEXT_LINES)
    for line in diff:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            rows.append(("@", line))
        else:
            rows.append((line[:1] or " ", line[1:]))
    return rows


def _is_multiline(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value.strip()


def _map_text(value: Any) -> str:
    if not isinstance(value, dict):
        return "unset" if value is None else value_text(value)
    text = fmt_map({k: v for k, v in value.items() if isinstance(v, int | float)})
    if isinstance(value.get("pods"), int | float):
        pods = f"{amount('pods', value['pods'])} pods"
        text = pods if text == "nothing" else f"{text}, {pods}"
    return text


def diff_rows(object_type: str, diff: Any) -> list[DiffRow]:
    """Rows for an entry's stored diff `{field: {"before", "after"}}`, by field name."""
    if not isinstance(diff, dict):
        return []
    resource = RESOURCE_FIELDS.get(object_type, frozenset())
    rows: list[DiffRow] = []
    for field, change in sorted(diff.items()):
        change = change if isinstance(change, dict) else {}
        before, after = change.get("before"), change.get("after")
        if field in resource:
            rows.extend(_resource_rows(field, before, after))
        elif _is_multiline(before) or _is_multiline(after):
            rows.append(DiffRow(field, "", "", lines=line_diff(before or "", after or "")))
        else:
            rows.append(DiffRow(field, value_text(before), value_text(after)))
    return rows

"""The field diff of an audit entry: what changed between two snapshots."""

from __future__ import annotations

from typing import Any


def diff(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """{field: {"before": old, "after": new}} for every field whose value differs."""
    old, new = before or {}, after or {}
    return {key: {"before": old.get(key), "after": new.get(key)}
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}

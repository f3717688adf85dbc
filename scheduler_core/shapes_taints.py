"""Node taints as Kubernetes validates them (part of scheduler_core.shapes, re-exported there):
`[{key, value, effect, timeAdded}]`, the key a qualified name, the value a label value, the
effect one of TAINT_EFFECTS, `timeAdded` (which Kubernetes writes on NoExecute taints) an RFC 3339
time or absent, and at most one taint per (key, effect) pair."""

from __future__ import annotations

import re
from typing import Any

from scheduler_core.shapes_base import ShapeError, check_text, join
from scheduler_core.shapes_names import check_label_key, check_label_value

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINT_KEYS = ("key", "value", "effect", "timeAdded")
MAX_TAINTS = 1000
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


def check_taints(value: Any, path: str) -> list[dict[str, str]]:
    """The taints, normalised to {key, value, effect} (plus timeAdded when given); None is []."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(path, "Expected a list of {key, value, effect} objects.")
    if len(value) > MAX_TAINTS:
        raise ShapeError(path, f"At most {MAX_TAINTS} taints.")
    taints: list[dict[str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, taint in enumerate(value):
        where = join(path, i)
        if not isinstance(taint, dict) or not isinstance(taint.get("key"), str) or not taint["key"]:
            raise ShapeError(path, f"Taint {i}: expected an object with a non-empty key.")
        unknown = sorted(set(taint) - set(TAINT_KEYS), key=str)
        if unknown:
            check_text(str(unknown[0]), path, max_length=253)
            raise ShapeError(path, f"Taint {i}: unknown key(s) {', '.join(map(str, unknown))}.")
        check_label_key(taint["key"], join(where, "key"))
        if taint.get("effect") not in TAINT_EFFECTS:
            raise ShapeError(path, f"Taint {i}: effect must be one of {', '.join(TAINT_EFFECTS)}, "
                                   f"not {taint.get('effect')!r}.")
        if not isinstance(taint.get("value", ""), str):
            raise ShapeError(path, f"Taint {i}: value must be a string.")
        check_label_value(taint.get("value", ""), join(where, "value"))
        pair = (taint["key"], taint["effect"])
        if pair in seen:
            raise ShapeError(where, f"Taint {i} repeats taint {seen[pair]}: taints must be unique by key and "
                                    f"effect ({pair[0]}:{pair[1]}).")
        seen[pair] = i
        out = {"key": taint["key"], "value": taint.get("value", ""), "effect": taint["effect"]}
        added = taint.get("timeAdded")
        if added is not None:
            if not isinstance(added, str) or not _RFC3339.fullmatch(added):
                if isinstance(added, str):
                    check_text(added, join(where, "timeAdded"), max_length=64)  # never echo control text
                raise ShapeError(join(where, "timeAdded"), f"{added!r} is not an RFC 3339 time "
                                                          "(e.g. 2024-01-02T15:04:05Z).")
            out["timeAdded"] = added
        taints.append(out)
    return taints

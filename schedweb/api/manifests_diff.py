"""Field diffs between two manifest documents (what a re-applied manifest would change), and the
paths a started job may still change."""

from __future__ import annotations

import re
from typing import Any

MAX_DIFF_ENTRIES = 200
# A started batch Job may change these (Volcano's validateJobUpdate: minAvailable, the tasks'
# minAvailable, priorityClassName) and its metadata; a PodGroup its minMember, minTaskMember,
# minResources, priorityClassName and metadata. Paths are relative to the document.
_MUTABLE_STARTED = {
    "Job": re.compile(r"^(metadata\.(labels|annotations)(\..*)?|spec\.minAvailable|spec\.priorityClassName|"
                      r"spec\.tasks\[\d+\]\.minAvailable)$"),
    "PodGroup": re.compile(r"^(metadata\.(labels|annotations)(\..*)?|"
                           r"spec\.(minMember|minTaskMember|minResources|priorityClassName)(\..*)?)$"),
}


def diff_docs(before: Any, after: Any, prefix: str = "") -> dict[str, dict[str, Any]]:
    """{path: {"from": old, "to": new}} for every leaf that differs (lists of the same length are
    compared item by item, others whole); at most MAX_DIFF_ENTRIES entries."""
    out: dict[str, dict[str, Any]] = {}
    _walk(before, after, prefix, out)
    return out


def _walk(before: Any, after: Any, path: str, out: dict[str, dict[str, Any]]) -> None:
    if len(out) >= MAX_DIFF_ENTRIES or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in list(before) + [k for k in after if k not in before]:
            _walk(before.get(key), after.get(key), f"{path}.{key}" if path else str(key), out)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (old, new) in enumerate(zip(before, after, strict=True)):
            _walk(old, new, f"{path}[{i}]", out)
        return
    out[path] = {"from": before, "to": after}


def immutable_when_started(kind: str, relative_paths: list[str]) -> list[str]:
    """The paths (relative to a `kind` document) a started job may not change."""
    allowed = _MUTABLE_STARTED[kind]
    return [p for p in relative_paths if not allowed.match(p)]

"""A task's pod spec as one value: the fields every replica of a template shares.

Tasks keep their own name, role, request, status and node; the pod spec below is stored once per
distinct content (`core.TaskSpec`, content-addressed by `spec_digest`) and referenced by every task
that has it. No Django model is imported here: the model, the writers and the loaders all use it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# The pod spec fields a TaskSpec stores, with the value a task without one has.
SPEC_FIELDS = ("node_selector", "tolerations", "affinity", "topology_spread_constraints", "labels")
SPEC_DEFAULTS: dict[str, Any] = {"node_selector": {}, "tolerations": [], "affinity": None,
                                 "topology_spread_constraints": [], "labels": {}}


def spec_values(source: dict[str, Any]) -> dict[str, Any]:
    """The spec fields of a task dict (missing or None: the default; affinity may be None)."""
    out = {}
    for name in SPEC_FIELDS:
        value = source.get(name)
        out[name] = SPEC_DEFAULTS[name] if value is None else value
    return out


def spec_digest(values: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a spec: equal specs (as JSON values) have equal digests."""
    text = json.dumps([values[name] for name in SPEC_FIELDS], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class DigestMemo:
    """spec_digest of task dicts, computed once per distinct set of value objects: the replicas of
    one entry share theirs (job_submission.expand_replicas copies the dict, not its values)."""

    def __init__(self) -> None:
        self._by_ids: dict[tuple[int, ...], tuple[str, dict[str, Any], tuple[Any, ...]]] = {}

    def __call__(self, row: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(digest, spec values) of a task dict."""
        objs = tuple(row.get(name) for name in SPEC_FIELDS)
        key = tuple(map(id, objs))
        hit = self._by_ids.get(key)
        # The memo keeps the value objects alive, so an id seen here cannot be reused by another
        # object meanwhile; the identity check is a guard all the same.
        if hit is None or not all(a is b for a, b in zip(hit[2], objs, strict=True)):
            values = spec_values(row)
            hit = self._by_ids[key] = (spec_digest(values), values, objs)
        return hit[0], hit[1]

"""Volcano NodeShard manifests (shard.volcano.sh/v1alpha1): read and written.

Volcano's CRD has `spec.nodesDesired` and `status.nodesInUse / nodesToAdd / nodesToRemove /
lastUpdateTime`. What schedweb stores besides (the shard's scheduler name and mode, and the
sharding controller's policy for it) travels as `schedweb.io/` annotations, so the document stays
valid for Volcano's CRD. The import reads the spec and those annotations; the status is the
scheduler's and the controller's, and is not imported (it may be present: an export re-applied).
An absent scheduler-name annotation means the shard's own name (Volcano names a shard after its
scheduler); other absent annotations mean the defaults.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from schedweb.api.manifests_base import check_keys, fail, metadata, obj

SHARD_API = "shard.volcano.sh/v1alpha1"
SCHEDULER_ANNOTATION = "schedweb.io/scheduler-name"
MODE_ANNOTATION = "schedweb.io/shard-mode"
MIN_NODES_ANNOTATION = "schedweb.io/min-nodes"
MAX_NODES_ANNOTATION = "schedweb.io/max-nodes"
CPU_MIN_ANNOTATION = "schedweb.io/cpu-utilization-min"
CPU_MAX_ANNOTATION = "schedweb.io/cpu-utilization-max"
SHARD_ANNOTATIONS = {SCHEDULER_ANNOTATION: "scheduler_name", MODE_ANNOTATION: "mode",
                     MIN_NODES_ANNOTATION: "min_nodes", MAX_NODES_ANNOTATION: "max_nodes",
                     CPU_MIN_ANNOTATION: "cpu_utilization_min", CPU_MAX_ANNOTATION: "cpu_utilization_max"}
SHARD_KEYS = {"apiVersion", "kind", "metadata", "spec", "status"}
STATUS_KEYS = {"nodesInUse", "nodesToAdd", "nodesToRemove", "lastUpdateTime"}
# Write-data field -> manifest path (relative to the document).
FIELD_PATHS = {"name": "metadata.name", "nodes_desired": "spec.nodesDesired",
               **{field: f"metadata.annotations.{key}" for key, field in SHARD_ANNOTATIONS.items()}}


def _number(annotations: dict, key: str, path: str, whole: bool) -> int | float | None:
    text = annotations.get(key)
    if text is None:
        return None
    where = f"{path}.metadata.annotations.{key}"
    try:
        value = int(str(text)) if whole else float(str(text))
    except ValueError:
        fail(where, f"Expected {'a whole number' if whole else 'a number'} as a string, not {text!r}.")
    if not whole and not math.isfinite(value):
        fail(where, f"Expected a finite number, not {text!r}.")
    return value


def node_shard_from_manifest(doc: dict, path: str) -> dict[str, Any]:
    """A NodeShard document as NodeShard write data (the API's NodeShardWriteSerializer)."""
    meta = metadata(doc, path)
    check_keys(doc, SHARD_KEYS, path)
    spec = obj(doc.get("spec"), f"{path}.spec")
    check_keys(spec, {"nodesDesired"}, f"{path}.spec")
    check_keys(obj(doc.get("status"), f"{path}.status"), STATUS_KEYS, f"{path}.status")
    annotations = obj(meta.get("annotations"), f"{path}.metadata.annotations")
    unknown = sorted(k for k in annotations if isinstance(k, str) and k.startswith("schedweb.io/")
                     and k not in SHARD_ANNOTATIONS)
    if unknown:
        fail(f"{path}.metadata.annotations.{unknown[0]}", "Unknown schedweb.io annotation on a NodeShard; "
                                                          f"known: {', '.join(sorted(SHARD_ANNOTATIONS))}.")
    desired = spec.get("nodesDesired")
    data: dict[str, Any] = {"name": meta["name"],
                            "scheduler_name": annotations.get(SCHEDULER_ANNOTATION, meta["name"]),
                            "nodes_desired": [] if desired is None else desired}
    if MODE_ANNOTATION in annotations:
        data["mode"] = annotations[MODE_ANNOTATION]
    for key, whole in ((MIN_NODES_ANNOTATION, True), (MAX_NODES_ANNOTATION, True),
                       (CPU_MIN_ANNOTATION, False), (CPU_MAX_ANNOTATION, False)):
        value = _number(annotations, key, path, whole)
        if value is not None:
            data[SHARD_ANNOTATIONS[key]] = value
    return data


def _fraction(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def node_shard_to_manifest(shard: Any, *, status: bool = True) -> dict[str, Any]:
    """A NodeShard model (or one built from write data) as a shard.volcano.sh/v1alpha1 document;
    `status=False` leaves the status out (what an import compares)."""
    annotations = {SCHEDULER_ANNOTATION: shard.scheduler_name, MODE_ANNOTATION: shard.mode,
                   MIN_NODES_ANNOTATION: str(shard.min_nodes)}
    if shard.max_nodes is not None:
        annotations[MAX_NODES_ANNOTATION] = str(shard.max_nodes)
    annotations[CPU_MIN_ANNOTATION] = _fraction(shard.cpu_utilization_min)
    annotations[CPU_MAX_ANNOTATION] = _fraction(shard.cpu_utilization_max)
    doc: dict[str, Any] = {"apiVersion": SHARD_API, "kind": "NodeShard",
                           "metadata": {"name": shard.name, "annotations": annotations},
                           "spec": {"nodesDesired": list(shard.nodes_desired or [])}}
    if status:
        when = shard.last_update_time
        doc["status"] = {"nodesInUse": list(shard.nodes_in_use or []),
                         "nodesToAdd": list(shard.nodes_to_add or []),
                         "nodesToRemove": list(shard.nodes_to_remove or [])}
        if when is not None:
            doc["status"]["lastUpdateTime"] = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return doc


def manifest_path(path: str, api_path: str) -> str:
    """The manifest path of an API error path (`nodes_desired[1]` -> `...spec.nodesDesired[1]`)."""
    head = api_path.split(".", 1)[0]
    base = head.split("[", 1)[0]
    if base in FIELD_PATHS:
        return f"{path}.{FIELD_PATHS[base]}{head[len(base):]}"
    return path if api_path == "non_field_errors" else f"{path}.{api_path}"


def release_first(docs: list[tuple[dict, str]], stored: dict[str, list[str]]) -> list[tuple[dict, str]]:
    """The NodeShard documents in an order their import can take: one that desires a node another
    shard of the manifest desires now comes after that shard (so a node moved between two shards
    is let go before it is taken); `stored` is each stored shard's desired nodes. A cycle (two
    shards swapping nodes) keeps the documents' order; the service then names the conflict."""
    pending = list(docs)
    held = {name: set(nodes) for name, nodes in stored.items()}
    out: list[tuple[dict, str]] = []
    while pending:
        names = {data["name"] for data, _ in pending}
        ready = next((item for item in pending if not any(
            set(item[0].get("nodes_desired") or []) & held.get(other, set())
            for other in names if other != item[0]["name"])), pending[0])
        pending.remove(ready)
        out.append(ready)
    return out

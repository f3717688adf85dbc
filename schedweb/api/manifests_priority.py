"""Kubernetes PriorityClass manifests (scheduling.k8s.io/v1 and v1beta1): read and written.

Kubernetes' rules apply: `value` is required and at most 1,000,000,000 (HighestUserDefinablePriority)
for user classes; the `system-` name prefix is reserved for the two built-in classes; at most one
class is `globalDefault` (the service refuses a second); `value` and `preemptionPolicy` cannot
change once created (schedweb.api.manifests_apply answers 409). The class's metadata labels and
annotations are not kept.
"""

from __future__ import annotations

from typing import Any

from schedweb.api.manifests_base import PRIORITY_CLASS_APIS, check_keys, fail, metadata

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
PRIORITY_CLASS_KEYS = {"apiVersion", "kind", "metadata", "value", "globalDefault", "description",
                       "preemptionPolicy"}
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
# The export's apiVersion (v1beta1 is read too; Kubernetes serves both as the same object).
EXPORT_API = PRIORITY_CLASS_APIS[0]
# Submit-data field -> manifest key.
FIELD_PATHS = {"name": "metadata.name", "value": "value", "preemption_policy": "preemptionPolicy",
               "description": "description", "global_default": "globalDefault"}


def priority_class_from_manifest(doc: dict, path: str) -> dict[str, Any]:
    """A PriorityClass document as priority class write data (the API's PriorityClassSerializer)."""
    meta = metadata(doc, path)
    check_keys(doc, PRIORITY_CLASS_KEYS, path)
    name, value = meta["name"], doc.get("value")
    if value is None:
        fail(f"{path}.value", "This field is required.")
    if not isinstance(value, int) or isinstance(value, bool):
        fail(f"{path}.value", "Must be an integer.")
    if name.startswith("system-"):
        if SYSTEM_CLASSES.get(name) != value:
            fail(f"{path}.metadata.name", "Priority class names with the 'system-' prefix are reserved for "
                                          "Kubernetes' built-in classes.")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        fail(f"{path}.value", f"The maximum allowed value of a user defined priority is "
                              f"{HIGHEST_USER_DEFINABLE_PRIORITY}.")
    policy = doc.get("preemptionPolicy", "PreemptLowerPriority")
    if policy not in PREEMPTION_POLICIES:
        fail(f"{path}.preemptionPolicy", f"Unsupported value {policy!r}: supported values are "
                                         f"{', '.join(PREEMPTION_POLICIES)}.")
    default = doc.get("globalDefault", False)
    if not isinstance(default, bool):
        fail(f"{path}.globalDefault", "Expected true or false.")
    description = doc.get("description", "")
    if not isinstance(description, str):
        fail(f"{path}.description", "Expected a string.")
    return {"name": name, "value": value, "preemption_policy": policy, "description": description,
            "global_default": default}


def priority_class_to_manifest(pc) -> dict[str, Any]:
    """A PriorityClass model (or one built from write data) as a scheduling.k8s.io/v1 document."""
    doc: dict[str, Any] = {"apiVersion": EXPORT_API, "kind": "PriorityClass", "metadata": {"name": pc.name},
                           "value": pc.value, "globalDefault": bool(pc.global_default),
                           "preemptionPolicy": pc.preemption_policy}
    if pc.description:
        doc["description"] = pc.description
    return doc


def manifest_path(path: str, api_path: str) -> str:
    """The manifest path of an API error path of this document (`value` -> `documents[0].value`)."""
    head = api_path.split(".", 1)[0]
    return f"{path}.{FIELD_PATHS[head]}" if head in FIELD_PATHS else f"{path}.{api_path}"

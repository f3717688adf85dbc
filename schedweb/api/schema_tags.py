"""OpenAPI operations grouped by resource, each with a one-line summary and request examples
(drf-spectacular postprocessing hook, after schema_links and schema_strict).

A path's tag is the last resource named in it (`/api/v1/namespaces/{ns}/jobs/{name}/` is
`jobs`), else its first segment, so a new endpoint is grouped without an entry here. Summaries
come from SUMMARIES (by method and path), else from the method, the resource and a trailing
action (`POST /queues/{name}/close/` = "Close a queue"). One a view sets itself is kept.
"""

from __future__ import annotations

from typing import Any

from schedweb.api.schema_examples import add_request_examples

PREFIX = "/api/v1/"
# tag -> (singular, plural, description); the order is the order Swagger UI shows them in.
RESOURCES: dict[str, tuple[str, str, str]] = {
    "queues": ("queue", "queues", "The queue hierarchy: create, limit, open and close queues; the tree "
               "with the newest cycle's figures."),
    "jobs": ("job", "jobs", "Jobs (Volcano PodGroups) with all their tasks: submit, list, read why one "
             "waits, cancel."),
    "tasks": ("task", "tasks", "Tasks (pods) of jobs; node agents report their status."),
    "nodes": ("node", "nodes", "Cluster nodes: allocatable, labels, taints, cordon; usage heartbeats."),
    "nodeshards": ("NodeShard", "NodeShards", "Scheduler shards (shard.volcano.sh NodeShard): the nodes each "
                   "scheduler instance owns, and the sharding controller's policy."),
    "priority-classes": ("priority class", "priority classes", "Kubernetes-style priority classes."),
    "namespace-quotas": ("namespace quota", "namespace quotas", "Hard limits per namespace."),
    "scheduler-config": ("scheduler configuration", "scheduler configurations",
                         "The Volcano scheduler configuration: versions, activation, dry runs."),
    "cycles": ("scheduling cycle", "scheduling cycles", "History of scheduling cycles: timings, counts."),
    "manifests": ("manifest", "manifests", "Volcano and Kubernetes YAML: import (apply) and export."),
    "audit": ("audit entry", "audit entries", "Who changed which queue, node, quota or configuration."),
    "tokens": ("API token", "API tokens", "Your API tokens: the key is shown once, at creation or rotation."),
    "me": ("account", "accounts", "The caller's account and queue roles."),
}
ARTICLES = {"audit entry": "an", "account": "an", "API token": "an"}
SUMMARIES: dict[tuple[str, str], str] = {
    ("get", "/api/v1/queues/tree/"): "Get the whole queue tree with current figures",
    ("post", "/api/v1/jobs/"): "Submit a job with all its tasks",
    ("delete", "/api/v1/jobs/{id}/"): "Cancel a job (the same as POST .../cancel/)",
    ("delete", "/api/v1/tokens/{id}/"): "Revoke an API token",
    ("post", "/api/v1/tokens/{id}/rotate/"): "Rotate an API token (a new key, shown once)",
    ("post", "/api/v1/tokens/"): "Create an API token (the key is shown once)",
    ("get", "/api/v1/scheduler-config/"): "Get the active scheduler configuration",
    ("put", "/api/v1/scheduler-config/"): "Activate a new scheduler configuration",
    ("get", "/api/v1/scheduler-config/versions/"): "List the scheduler configuration versions",
    ("post", "/api/v1/scheduler-config/dry-run/"): "Dry-run a scheduler configuration on the current state",
    ("post", "/api/v1/manifests/import/"): "Import (apply) Volcano manifests",
    ("get", "/api/v1/manifests/export/"): "Export the cluster as Volcano manifests",
    ("get", "/api/v1/me/"): "Get your account and queue roles",
    ("post", "/api/v1/namespace-quotas/"): "Set a namespace quota",
    ("post", "/api/v1/nodes/{name}/heartbeat/"): "Report a node's usage",
    ("post", "/api/v1/tasks/{id}/status/"): "Report a task's status",
    ("post", "/api/v1/queues/{name}/open/"): "Open a queue",
    ("post", "/api/v1/queues/{name}/close/"): "Close a queue (Closing while jobs run)",
}
VERBS = {("get", False): "List", ("post", False): "Create", ("get", True): "Get", ("put", True): "Replace",
         ("patch", True): "Update", ("delete", True): "Delete"}


def _segments(path: str) -> list[str]:
    return [s for s in path.removeprefix(PREFIX).split("/") if s]


def tag_of(path: str) -> str:
    """The resource a path is about: the last known resource named in it, else its first segment."""
    segments = _segments(path)
    for segment in reversed(segments):
        if segment in RESOURCES:
            return segment
    return segments[0] if segments else "api"


def summary_of(method: str, path: str) -> str:
    """A one-line summary: SUMMARIES, else verb + resource (+ the trailing action's name), and
    how the path names it when it is nested under a namespace."""
    if (method, path) in SUMMARIES:
        return SUMMARIES[(method, path)]
    summary = _generic_summary(method, path)
    segments = _segments(path)
    if segments and segments[0] == "namespaces" and tag_of(path) != "namespaces":
        item = "{" in segments[-1] or segments[-1] not in RESOURCES
        summary += " by namespace and name" if item else " of a namespace"
    return summary


def _generic_summary(method: str, path: str) -> str:
    tag = tag_of(path)
    singular, plural, _ = RESOURCES.get(tag, (tag, tag, ""))
    segments = _segments(path)
    item = bool(segments) and segments[-1].startswith("{")
    action = segments[-1] if segments and not item and segments[-1] != tag else None
    if action is not None:
        words = action.replace("-", " ")
        if method == "get":  # a read: /queues/{name}/history/ is "Get a queue's history"
            on_item = len(segments) > 1 and segments[-2].startswith("{")
            return (f"Get {ARTICLES.get(singular, 'a')} {singular}'s {words}" if on_item
                    else f"Get the {plural} {words}")
        return f"{words.capitalize()} {ARTICLES.get(singular, 'a')} {singular}"
    verb = VERBS.get((method, item), method.upper())
    if item or verb != "List":
        return f"{verb} {ARTICLES.get(singular, 'a')} {singular}"
    return f"{verb} {plural}"


def describe_operations(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Tag every operation by resource, give it a summary, add the request examples, and list
    the tags with their descriptions."""
    paths = result.get("paths", {})
    used: set[str] = set()
    for path, operations in paths.items():
        tag = tag_of(path)
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            operation["tags"] = [tag]
            operation.setdefault("summary", summary_of(method, path))
            used.add(tag)
    add_request_examples(paths)
    known = [t for t in RESOURCES if t in used] + sorted(used - set(RESOURCES))
    result["tags"] = [{"name": t, "description": RESOURCES[t][2]} if t in RESOURCES else {"name": t}
                      for t in known]
    return result

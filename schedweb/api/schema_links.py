"""OpenAPI links (drf-spectacular postprocessing hook): what a created object's response leads to.

A client (or schemathesis' stateful tests) can follow them: the `name` / `id` / `namespace` of a
201 body is the path parameter of the object's own operations.
"""

from __future__ import annotations

from typing import Any

# (collection path, created object's path, its key parameter, the body field holding it)
CREATED = [
    ("/api/v1/queues/", "/api/v1/queues/{name}/", "name", "name"),
    ("/api/v1/nodes/", "/api/v1/nodes/{name}/", "name", "name"),
    ("/api/v1/nodeshards/", "/api/v1/nodeshards/{name}/", "name", "name"),
    ("/api/v1/priority-classes/", "/api/v1/priority-classes/{name}/", "name", "name"),
    ("/api/v1/namespace-quotas/", "/api/v1/namespace-quotas/{namespace}/", "namespace", "namespace"),
    ("/api/v1/jobs/", "/api/v1/jobs/{id}/", "id", "id"),
    ("/api/v1/tokens/", "/api/v1/tokens/{id}/", "id", "id"),
]


def _link_name(operation_id: str) -> str:
    return "".join(part.capitalize() for part in operation_id.removeprefix("v1_").split("_"))


def add_links(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Add `links` to each create operation's 201 response: every operation under the created
    object's path (retrieve, update, delete, actions such as close/cancel/rotate)."""
    paths = result.get("paths", {})
    for collection, item, param, field in CREATED:
        created = paths.get(collection, {}).get("post", {}).get("responses", {}).get("201")
        if created is None:
            continue
        links = created.setdefault("links", {})
        for path, operations in paths.items():
            if not path.startswith(item):
                continue
            for method, operation in operations.items():
                if method in ("get", "put", "patch", "delete", "post") and "operationId" in operation:
                    links[_link_name(operation["operationId"])] = {
                        "operationId": operation["operationId"],
                        "parameters": {param: f"$response.body#/{field}"},
                    }
    return result

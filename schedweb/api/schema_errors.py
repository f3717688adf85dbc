"""Every operation declares the errors it can answer, all with the one error body
(drf-spectacular postprocessing hook).

The body is schedweb.api.exceptions' envelope, `{"error": {"code", "message", "fields"}}`,
component `Error`. Which statuses an operation declares:

- 400 (bad query parameter, body or text), 401 (no or a bad token), 403 (not allowed), 429
  (throttled, with `Retry-After`) and 503 (database down, with `Retry-After`): every operation;
- 404: operations with a path parameter (the object named in the path does not exist);
- 409 (`conflict`, `idempotency_key_reused`): writes (POST, PUT, PATCH, DELETE);
- 412 (`If-Match` no longer matches): writes to one queue (`/queues/{name}/...`);
- 415 (a Content-Type the operation does not parse: bodies are JSON, YAML where a manifest or
  a configuration is the body): operations with a request body.

A description a view already gave its error (jobs' 409 says which codes) is kept; the content
becomes the Error schema.
"""

from __future__ import annotations

from typing import Any

ERROR_COMPONENT = {
    "type": "object",
    "description": "The one error body of the API (schedweb.api.exceptions).",
    "properties": {"error": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Machine-readable: invalid, not_found, conflict, ..."},
            "message": {"type": "string", "description": "The first problem, for people."},
            "fields": {"type": "object",
                       "additionalProperties": {"type": "array", "items": {"type": "string"}},
                       "description": "Every bad field by its path (`tasks[1].request`), with its messages."},
        },
        "required": ["code", "message", "fields"],
    }},
    "required": ["error"],
}

DESCRIPTIONS = {
    "400": "Bad input: `fields` names every bad parameter or body field",
    "401": "Not signed in, or the token is unknown, expired or revoked",
    "403": "Signed in but not allowed to do this",
    "404": "No such object",
    "409": "Conflicts with what exists (`conflict`, `idempotency_key_reused`)",
    "412": "`If-Match` names a version that is no longer the current one",
    "415": "Unsupported Content-Type (the API speaks JSON; YAML where a manifest is the body)",
    "429": "Too many requests; `Retry-After` says when to try again",
    "503": "The database is unavailable; `Retry-After` says when to try again",
}
WRITES = {"post", "put", "patch", "delete"}
METHODS = WRITES | {"get", "head", "options"}
QUEUE_ITEM = "/api/v1/queues/{name}/"


def error_statuses(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    """The error statuses `method path` declares (see the module docstring)."""
    codes = ["400", "401", "403", "429", "503"]
    if "{" in path:
        codes.append("404")
    if method in WRITES:
        codes.append("409")
        if path.startswith(QUEUE_ITEM):
            codes.append("412")
    if "requestBody" in operation:
        codes.append("415")
    return sorted(codes)


def declare_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Add the `Error` component and each operation's error responses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_COMPONENT
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in METHODS or not isinstance(operation, dict):
                continue
            responses = operation.setdefault("responses", {})
            for code in error_statuses(method, path, operation):
                existing = responses.get(code) or {}
                description = existing.get("description") or DESCRIPTIONS[code]
                responses[code] = {"description": description, "content": content}
    return result

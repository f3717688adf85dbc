"""OpenAPI 3.0.3 response schemas as JSON Schema, read strictly, for jsonschema's validator.

Strict as the specification (3.0.3) reads, not as a lenient tool does:
- `nullable: true` allows null only beside a `type` in the same schema; next to `allOf`/`oneOf`
  alone it means nothing (so `{"allOf": [{"$ref": X}], "nullable": true}` refuses null);
- `oneOf` means exactly one: `oneOf [integer, number]` refuses every integer;
- a `readOnly` property is still required in a response, a `writeOnly` one is not.
References stay references (`#/$defs/<component>`), so recursive schemas (the queue tree) work.
"""

from __future__ import annotations

from typing import Any

import jsonschema

DROPPED = {"nullable", "readOnly", "writeOnly", "example", "examples", "description", "discriminator",
           "xml", "externalDocs", "deprecated", "title"}


def convert(node: Any) -> Any:
    """One OpenAPI schema (or part of one) as JSON Schema 2020-12."""
    if isinstance(node, list):
        return [convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return {"$ref": "#/$defs/" + node["$ref"].rsplit("/", 1)[1]}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED:
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: convert(sub) for name, sub in value.items()}
        else:
            out[key] = convert(value)
    if node.get("nullable") is True and "type" in node:
        out["type"] = [node["type"], "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if "required" in node:
        props = node.get("properties", {})
        out["required"] = [p for p in node["required"] if not props.get(p, {}).get("writeOnly")]
    return out


def validator(schema: dict, response_schema: dict) -> jsonschema.Draft202012Validator:
    """A validator of `response_schema` (a part of the OpenAPI document `schema`)."""
    defs = {name: convert(s) for name, s in schema.get("components", {}).get("schemas", {}).items()}
    return jsonschema.Draft202012Validator({**convert(response_schema), "$defs": defs})


def problems(schema: dict, response_schema: dict, body: Any) -> list[str]:
    """Every way `body` breaks `response_schema` (empty: it conforms)."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
            for e in validator(schema, response_schema).iter_errors(body)]

"""Nullable references that strict validators accept (drf-spectacular postprocessing hook).

drf-spectacular writes a nullable nested serializer as `{"allOf": [{"$ref": X}], "nullable":
true}`. OpenAPI 3.0.3 gives `nullable` a meaning only beside a `type` in the same schema, so a
strict validator checks `null` against X (an object) and refuses it. The hook writes each as
`{"oneOf": [{"$ref": X}, {"$ref": NullEnum}]}`, the form drf-spectacular already uses for
nullable enums (`NullEnum` is `{"enum": [null]}`): null matches the second alternative only, an
object the first only.
"""

from __future__ import annotations

from typing import Any

NULL_ENUM = {"enum": [None]}
NULL_REF = {"$ref": "#/components/schemas/NullEnum"}


def _rewrite(node: Any) -> bool:
    """Rewrite nullable single-reference allOfs below `node`; True when any was found."""
    found = False
    if isinstance(node, dict):
        refs = node.get("allOf")
        if node.get("nullable") is True and isinstance(refs, list) and len(refs) == 1 and "$ref" in refs[0]:
            del node["nullable"], node["allOf"]
            node["oneOf"] = [refs[0], dict(NULL_REF)]
            found = True
        for value in node.values():
            found = _rewrite(value) or found
    elif isinstance(node, list):
        for value in node:
            found = _rewrite(value) or found
    return found


def nullable_refs(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Turn every `allOf [$ref] + nullable` into `oneOf [$ref, NullEnum]`."""
    if _rewrite(result.get("paths", {})) | _rewrite(result.get("components", {})):
        result.setdefault("components", {}).setdefault("schemas", {}).setdefault("NullEnum", NULL_ENUM)
    return result

"""Optimistic versions over HTTP: an object's `version` as its ETag, `If-Match` checked against
it (412 when it names another version). Queues and NodeShards use it; the services compare the
version again under their row lock (`StaleVersion`)."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import APIException

from schedweb.core.queue_services import StaleVersion


class PreconditionFailed(APIException):
    """412: the If-Match names a version of the object that is not the current one."""

    status_code = 412
    default_code = "precondition_failed"
    default_detail = "The object has changed since that version (If-Match); read it again."


def etag(obj: Any) -> str:
    """The object's ETag: `"<pk>-<version>"`."""
    return f'"{obj.pk}-{obj.version}"'


def expected_version(request: Any, obj: Any, kind: str) -> int | None:
    """The version an If-Match header asks for (None: no header, or `*`); a tag that is not one
    of the object's current version is a 412 at once, naming the `kind` ("queue", "NodeShard")."""
    header = request.headers.get("If-Match")
    if header is None or header.strip() == "*":
        return None
    for tag in header.split(","):
        pk, _, version = tag.strip().removeprefix("W/").strip('"').partition("-")
        if pk == str(obj.pk) and version == str(obj.version):
            return obj.version
    raise PreconditionFailed(f"If-Match {header.strip()} does not name the current version of {kind} "
                             f"{obj.name} (ETag {etag(obj)}); read it again and retry.")


def stale(exc: StaleVersion) -> PreconditionFailed:
    """The 412 for a version the service found changed under its lock."""
    return PreconditionFailed("; ".join(exc.messages))

"""The one write of the audit app: record(...), called by schedweb.core services inside their
transaction, so an entry exists exactly when the change it describes was committed."""

from __future__ import annotations

from typing import Any

from schedweb.audit.context import current_request_info
from schedweb.audit.diff import diff as field_diff
from schedweb.audit.models import AuditEntry

SYSTEM_ACTOR = "system"


def record(*, action: str, object_type: str, object_key: str, before: dict[str, Any] | None = None,
           after: dict[str, Any] | None = None, actor: Any = None, queue_id: int | None = None,
           parent_queue_id: int | None = None) -> AuditEntry | None:
    """Store one audit entry; an update that changed nothing stores none (returns None).

    `actor` None means the signed-in user of the current request, or "system" outside requests.
    """
    changes = field_diff(before, after)
    if before is not None and after is not None and not changes:
        return None
    info = current_request_info()
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    if actor is None and info is not None:
        actor = info.user
    return AuditEntry.objects.create(
        actor=actor, actor_name=actor.get_username() if actor is not None else SYSTEM_ACTOR,
        token_name=info.token_name if info else "", action=action, object_type=object_type,
        object_key=str(object_key)[:320], queue_id=queue_id, parent_queue_id=parent_queue_id,
        before=before, after=after, diff=changes,
        request_id=info.request_id if info else "", ip=info.ip if info else None,
    )

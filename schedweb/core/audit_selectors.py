"""Reads of the audit log, filtered to what a user may see (API and dashboard share this)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, QuerySet

from schedweb.audit.models import AuditEntry
from schedweb.core.access import QueueAccess
from schedweb.core.models import Queue


def administered_queue_ids(user) -> set[int]:
    """Ids of the queues `user` administers directly or through an ancestor (all for staff)."""
    access = QueueAccess(user)
    ids = Queue.objects.values_list("id", flat=True)
    return set(ids) if access.is_staff else {qid for qid in ids if access.can_admin(qid)}


def about_queue(qs: QuerySet[AuditEntry], name: str) -> QuerySet[AuditEntry]:
    """Entries about the queue `name`, its child queues and its jobs."""
    queue_id = Queue.objects.filter(name=name).values_list("id", flat=True).first()
    return qs.filter(Q(queue_id=queue_id) | Q(parent_queue_id=queue_id)) if queue_id else qs.none()


def entries_for(user, *, object_type: str | None = None, object_key: str | None = None,
                queue: str | None = None, actor: str | None = None, action: str | None = None,
                since: datetime | None = None, until: datetime | None = None) -> QuerySet[AuditEntry]:
    """The entries `user` may read, newest first: staff see all; queue admins see the entries of
    the queues they administer (and of jobs in them, and of queues deleted from under them);
    everyone else sees none. Optional filters narrow the result; `queue` is a queue name."""
    qs = AuditEntry.objects.select_related("actor")
    if not (user and user.is_authenticated):
        return qs.none()
    if not (user.is_staff or user.is_superuser):
        ids = administered_queue_ids(user)
        if not ids:
            return qs.none()
        qs = qs.filter(Q(queue_id__in=ids) | Q(parent_queue_id__in=ids))
    if object_type:
        qs = qs.filter(object_type=object_type)
    if object_key:
        qs = qs.filter(object_key=object_key)
    if queue:
        qs = about_queue(qs, queue)
    if actor:
        qs = qs.filter(actor_name=actor)
    if action:
        qs = qs.filter(action=action)
    if since:
        qs = qs.filter(timestamp__gte=since)
    if until:
        qs = qs.filter(timestamp__lt=until)
    return qs.order_by("-timestamp", "-id")

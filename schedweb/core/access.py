"""Who may do what on the queue tree: ACLs inherited down the tree (YuniKorn-like).

- every signed-in user reads everything;
- a queue's admins (users and groups) manage that queue, its descendants and their jobs;
- its submitters submit jobs into its leaf descendants and cancel their own jobs there;
- staff (and superusers) may do everything.

The domain rule, used by the API's permissions, the pages and the audit log alike.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db.models import Q

from schedweb.core.models import Queue

# Names of the ACL many-to-many fields on core.Queue.
ADMIN_USERS, ADMIN_GROUPS = "admin_users", "admin_groups"
SUBMITTER_USERS, SUBMITTER_GROUPS = "submitter_users", "submitter_groups"


class QueueAccess:
    """What one user may do on the queue tree; three queries at most, cached per request."""

    def __init__(self, user) -> None:
        self.user = user
        self.is_staff = bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))

    @cached_property
    def _parents(self) -> dict[int, int | None]:
        return dict(Queue.objects.values_list("id", "parent_id"))

    def _granted(self, users_field: str, groups_field: str) -> frozenset[int]:
        if not (self.user and self.user.is_authenticated):
            return frozenset()
        group_ids = list(self.user.groups.values_list("id", flat=True))
        cond = Q(**{users_field: self.user})
        if group_ids:
            cond |= Q(**{f"{groups_field}__in": group_ids})
        return frozenset(Queue.objects.filter(cond).values_list("id", flat=True).distinct())

    @cached_property
    def _admin_direct(self) -> frozenset[int]:
        return self._granted(ADMIN_USERS, ADMIN_GROUPS)

    @cached_property
    def _submitter_direct(self) -> frozenset[int]:
        return self._granted(SUBMITTER_USERS, SUBMITTER_GROUPS)

    def _chain(self, queue_id: int | None) -> list[int]:
        """The queue and its ancestors (guards against a cycle that should never exist)."""
        chain: list[int] = []
        while queue_id is not None and queue_id not in chain:
            chain.append(queue_id)
            queue_id = self._parents.get(queue_id)
        return chain

    def can_admin(self, queue_id: int | None) -> bool:
        """Manage the queue (None = the implicit root: staff only) and everything under it."""
        if self.is_staff:
            return True
        return queue_id is not None and any(q in self._admin_direct for q in self._chain(queue_id))

    def can_submit(self, queue_id: int) -> bool:
        """Submit jobs into this queue (leaf-ness is validated by the service, with a field error)."""
        if self.can_admin(queue_id):
            return True
        return any(q in self._submitter_direct for q in self._chain(queue_id))

    def can_cancel(self, job) -> bool:
        """Cancel a job: queue admins any job, submitters their own jobs."""
        if self.can_admin(job.queue_id):
            return True
        return job.submitted_by_id == self.user.pk and self.can_submit(job.queue_id)


def queue_access(request: Any) -> QueueAccess:
    """The request's QueueAccess (built once per request; a Django or a DRF request)."""
    access = getattr(request, "_queue_access", None)
    if access is None or access.user is not request.user:
        access = QueueAccess(request.user)
        request._queue_access = access
    return access

"""DRF permission classes. The queue rules they and the pages apply are the core app's
(schedweb.core.access: queue ACLs inherited down the tree); only staff manage nodes, priority
classes, namespace quotas and the scheduler config (node agents may instead hold the
`core.change_node` / `core.change_task` permissions).
"""

from __future__ import annotations

from rest_framework import permissions

# Re-exported for the modules that still import it from here (schedweb.api.commands,
# schedweb.api.manifests_apply, schedweb.scheduling.submit_preview,
# tests/schedweb/scheduling/test_submit_preview.py);
# new code imports schedweb.core.access.
from schedweb.core.access import QueueAccess  # noqa: F401


class ReadAnyWriteStaff(permissions.IsAuthenticated):
    """Signed-in users read; staff (or holders of the view's `write_perm`) write."""

    def has_permission(self, request, view) -> bool:
        """Reads for signed-in users; writes for staff or the action's agent permission."""
        if not super().has_permission(request, view):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        user = request.user
        if user.is_staff or user.is_superuser:
            return True
        perm = getattr(view, "agent_perms", {}).get(getattr(view, "action", None))
        return bool(perm and user.has_perm(perm))

"""Read-only admin of the audit log (entries are written by the services only)."""

from __future__ import annotations

from django.contrib import admin

from schedweb.audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Browse and search entries; nobody adds, edits or deletes them here."""

    list_display = ["timestamp", "actor_name", "token_name", "action", "object_type", "object_key", "ip"]
    list_filter = ["object_type", "action"]
    search_fields = ["object_key", "actor_name", "request_id"]
    date_hierarchy = "timestamp"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request) -> bool:
        """Entries come from the services only."""
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        """An audit trail is immutable."""
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        """An audit trail is immutable."""
        return False

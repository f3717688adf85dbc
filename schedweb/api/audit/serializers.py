"""Serializer of audit entries for /api/v1/audit/."""

from __future__ import annotations

from rest_framework import serializers

from schedweb.audit.models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer):
    """An entry as stored; `actor` is the actor's name ("system" when no user acted)."""

    actor = serializers.CharField(source="actor_name", read_only=True)

    class Meta:
        model = AuditEntry
        fields = ["id", "timestamp", "actor", "token_name", "action", "object_type", "object_key",
                  "before", "after", "diff", "request_id", "ip"]
        read_only_fields = fields

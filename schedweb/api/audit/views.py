"""GET /api/v1/audit/: the audit log, read-only; staff see everything, queue admins their queues."""

from __future__ import annotations

import django_filters
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import mixins, viewsets

from schedweb.api.audit.serializers import AuditEntrySerializer
from schedweb.audit.models import AuditAction, AuditEntry, AuditObjectType
from schedweb.core.audit_selectors import about_queue, entries_for
from schedweb.core.filtersets import UtcDateTimeFilter


class AuditEntryFilterSet(django_filters.FilterSet):
    """Entries by object type and key, action, actor name, queue name and time range."""

    object_type = django_filters.ChoiceFilter(choices=AuditObjectType.choices)
    object_key = django_filters.CharFilter()
    action = django_filters.ChoiceFilter(choices=AuditAction.choices)
    actor = django_filters.CharFilter(field_name="actor_name")
    queue = django_filters.CharFilter(method="filter_queue")
    since = UtcDateTimeFilter(field_name="timestamp", lookup_expr="gte")
    until = UtcDateTimeFilter(field_name="timestamp", lookup_expr="lt")

    class Meta:
        model = AuditEntry
        fields = ["object_type", "object_key", "action", "actor", "queue", "since", "until"]

    def filter_queue(self, qs, name: str, value: str):
        """Entries about the queue `value` and about its children and jobs."""
        return about_queue(qs, value)


class AuditEntryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The audit log, newest first. Other signed-in users get an empty list."""

    serializer_class = AuditEntrySerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = AuditEntryFilterSet

    def get_queryset(self):
        """The entries the requesting user may read."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return AuditEntry.objects.none()
        return entries_for(self.request.user)

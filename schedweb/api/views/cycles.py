"""Scheduling cycles: the history of CycleRun rows with their figures, and each cycle's samples."""

from __future__ import annotations

from django_filters import rest_framework as filters
from rest_framework import mixins, permissions, serializers, viewsets
from rest_framework.response import Response

from schedweb.core.filtersets import UtcDateTimeFilter
from schedweb.scheduling.models import CycleRun, QueueSample


class CycleRunSerializer(serializers.ModelSerializer):
    """One cycle: when, how long (load / schedule / write), what it decided, what went wrong."""

    class Meta:
        model = CycleRun
        fields = ["id", "started", "skipped", "config_version", "load_seconds", "schedule_seconds",
                  "write_seconds", "duration_seconds", "binds", "pipelined", "evictions", "pending_jobs",
                  "conflicts", "errors", "warnings", "rescheduling_ran"]


class QueueSampleSerializer(serializers.ModelSerializer):
    """A queue's figures in one cycle (stored units: milli-cpu, bytes, milli-units)."""

    class Meta:
        model = QueueSample
        fields = ["queue", "deserved", "allocated", "request", "inqueue", "elastic", "capability",
                  "real_capability", "guarantee", "share", "weight", "overused"]


class CycleDetailSerializer(CycleRunSerializer):
    """A cycle with the queue samples it recorded."""

    queue_samples = QueueSampleSerializer(many=True, read_only=True)

    class Meta(CycleRunSerializer.Meta):
        fields = [*CycleRunSerializer.Meta.fields, "queue_samples"]


class CycleFilterSet(filters.FilterSet):
    """?skipped=true|false, ?has_errors=true|false, ?since=<ISO time>."""

    since = UtcDateTimeFilter(field_name="started", lookup_expr="gte")
    has_errors = filters.BooleanFilter(method="filter_errors")

    class Meta:
        model = CycleRun
        fields = ["skipped"]

    def filter_errors(self, queryset, name, value):
        """Cycles that recorded an error (or none)."""
        return queryset.exclude(errors="") if value else queryset.filter(errors="")


class CycleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Scheduling cycles, newest first; every signed-in user reads them."""

    queryset = CycleRun.objects.order_by("-started", "-id")
    serializer_class = CycleRunSerializer
    permission_classes = [permissions.IsAuthenticated]
    filterset_class = CycleFilterSet

    def retrieve(self, request, *args, **kwargs):
        """One cycle with its queue samples (two queries)."""
        cycle = self.get_object()
        cycle = CycleRun.objects.prefetch_related("queue_samples").get(pk=cycle.pk)
        return Response(CycleDetailSerializer(cycle).data)

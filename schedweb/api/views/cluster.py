"""Staff-managed settings: priority classes, namespace quotas and the scheduler configuration."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response

from schedweb.api import limits
from schedweb.api.exceptions import sanitize
from schedweb.api.parsers import CONFIG_YAML_PARSERS
from schedweb.api.permissions import ReadAnyWriteStaff
from schedweb.api.serializers.cluster import (
    NamespaceQuotaSerializer,
    PriorityClassSerializer,
    SchedulerConfigDryRunSerializer,
    SchedulerConfigSerializer,
    SchedulerConfigWriteSerializer,
)
from schedweb.api.views.base import location, validated
from schedweb.core import services
from schedweb.core.models import NamespaceQuota, PriorityClass, SchedulerConfig
from schedweb.core.selectors import namespace_used
from schedweb.core.validation import check_text
from schedweb.core.yaml_budget import check_yaml_budget


class PriorityClassViewSet(viewsets.GenericViewSet):
    """Priority classes, looked up by name."""

    queryset = PriorityClass.objects.all()
    serializer_class = PriorityClassSerializer
    permission_classes = [ReadAnyWriteStaff]
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filter_backends = [OrderingFilter]
    ordering_fields = ["name", "value"]
    ordering = ["-value", "name"]

    def list(self, request):
        """All priority classes, highest value first."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, name: str):
        """One priority class."""
        return Response(self.get_serializer(self.get_object()).data)

    def create(self, request):
        """Create a priority class."""
        pc = services.priority_class_create(**validated(PriorityClassSerializer, request), actor=request.user)
        return Response(self.get_serializer(pc).data, status=status.HTTP_201_CREATED,
                        headers=location("priorityclass", pc.name))

    def partial_update(self, request, name: str):
        """Change a priority class's value, policy or description."""
        data = validated(PriorityClassSerializer, request, partial=True)
        pc = services.priority_class_update(priority_class=self.get_object(), actor=request.user, **data)
        return Response(self.get_serializer(pc).data)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted")})
    def destroy(self, request, name: str):
        """Delete a priority class no job uses."""
        services.priority_class_delete(priority_class=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NamespaceQuotaViewSet(viewsets.GenericViewSet):
    """Namespace resource quotas (the resourcequota plugin), looked up by namespace."""

    queryset = NamespaceQuota.objects.all()
    serializer_class = NamespaceQuotaSerializer
    permission_classes = [ReadAnyWriteStaff]
    lookup_field = "namespace"
    lookup_value_regex = "[^/]+"
    filter_backends = [OrderingFilter]
    ordering_fields = ["namespace"]
    ordering = ["namespace"]

    def list(self, request):
        """All quotas with what their namespaces use now."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        used = namespace_used([q.namespace for q in page])
        return self.get_paginated_response(self.get_serializer(
            page, many=True, context={**self.get_serializer_context(), "namespace_used": used}).data)

    def retrieve(self, request, namespace: str):
        """One namespace's quota."""
        return Response(self.get_serializer(self.get_object()).data)

    def create(self, request):
        """Set a namespace's quota (creates or replaces it)."""
        data = validated(NamespaceQuotaSerializer, request)
        quota = services.namespace_quota_set(namespace=data["namespace"], hard=data["hard"],
                                             actor=request.user)
        return Response(self.get_serializer(quota).data, status=status.HTTP_201_CREATED,
                        headers=location("namespacequota", quota.namespace))

    @extend_schema(responses={204: OpenApiResponse(description="Deleted")})
    def destroy(self, request, namespace: str):
        """Remove a namespace's quota."""
        services.namespace_quota_set(namespace=self.get_object().namespace, hard=None, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SchedulerConfigViewSet(viewsets.GenericViewSet):
    """The scheduler configuration: the active version, its replacement and the version history."""

    queryset = SchedulerConfig.objects.select_related("created_by")
    serializer_class = SchedulerConfigSerializer
    permission_classes = [ReadAnyWriteStaff]

    def get_parsers(self):
        """The dry-run also takes the configuration as a YAML body (application/yaml, x-yaml,
        text/yaml); JSON {"yaml": ...} everywhere. (Parsers are chosen before `self.action` is
        set: the route's action map says which action this is.)"""
        parsers = super().get_parsers()
        if getattr(self, "action_map", {}).get("post") == "dry_run":
            parsers = [parser() for parser in CONFIG_YAML_PARSERS] + parsers
        return parsers

    def _active(self) -> SchedulerConfig:
        config = self.get_queryset().filter(active=True).first()
        if config is None:
            raise NotFound("No scheduler configuration is active yet.")
        return config

    def get_object(self) -> SchedulerConfig:
        """The active configuration: this endpoint is a singleton without a lookup in its URL
        (DRF's OPTIONS metadata calls get_object for PUT)."""
        return self._active()

    @extend_schema(operation_id="v1_scheduler_config_retrieve", responses={200: SchedulerConfigSerializer})
    def active(self, request):
        """The active configuration (one object: the action is not a list)."""
        return Response(self.get_serializer(self._active()).data)

    @extend_schema(request=SchedulerConfigWriteSerializer, responses={200: SchedulerConfigSerializer})
    def replace(self, request):
        """Validate (parse_conf) and activate a new configuration version."""
        data = validated(SchedulerConfigWriteSerializer, request)
        config = services.scheduler_config_activate(yaml=data["yaml"], comment=data["comment"],
                                                    created_by=request.user)
        return Response(self.get_serializer(self.get_queryset().get(pk=config.pk)).data)

    @extend_schema(request={"application/json": SchedulerConfigDryRunSerializer,
                            "application/yaml": OpenApiTypes.STR},
                   responses={200: OpenApiResponse(response=OpenApiTypes.OBJECT, description=(
                       "What one session would change (no writes): "
                                                   "binds, pipelined, evictions, job_phase_changes, "
                       "reasons, queues (after) and queues_before."))})
    def dry_run(self, request):
        """Run one session on the current state with the given (or the active) configuration:
        JSON {"yaml": ...} or the YAML itself (Content-Type application/yaml)."""
        from scheduler_core.framework.conf import ConfError
        from schedweb.scheduling.dry_run import dry_run

        data = validated(SchedulerConfigDryRunSerializer, request)
        # The same text rules as an activation: no control characters or lone surrogates (a
        # ConfError echoes the text, and the UTF-8 renderer cannot encode a lone surrogate).
        check_text(data["yaml"], "yaml", multiline=True)
        check_yaml_budget(data["yaml"], "yaml")
        try:
            with limits.dry_run(request.user):  # a user's concurrent dry runs are capped
                return Response(dry_run(yaml=data["yaml"]))
        except ConfError as exc:
            raise ValidationError({"yaml": [sanitize(str(exc))]}) from None

    @extend_schema(responses={200: SchedulerConfigSerializer(many=True)})
    @action(detail=False, methods=["get"])
    def versions(self, request):
        """Every stored version, newest first, a page at a time (`limit`, `continue`)."""
        page = self.paginate_queryset(self.get_queryset().order_by("-version"))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

"""Nodes: CRUD by name (staff) and usage heartbeats (staff or node agents with core.change_node)."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response

from schedweb.api.permissions import ReadAnyWriteStaff
from schedweb.api.serializers.cluster import (
    HeartbeatSerializer,
    NodeSerializer,
    NodeWriteSerializer,
    node_allocated,
)
from schedweb.api.views.base import location, validated
from schedweb.core import services
from schedweb.core.filtersets import NodeFilterSet
from schedweb.core.models import Node


class NodeViewSet(viewsets.GenericViewSet):
    """Cluster nodes, looked up by name."""

    queryset = Node.objects.all()
    serializer_class = NodeSerializer
    permission_classes = [ReadAnyWriteStaff]
    agent_perms = {"heartbeat": "core.change_node"}
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = NodeFilterSet
    ordering_fields = ["name", "created", "usage_cpu", "usage_memory"]
    ordering = ["name"]

    def _respond(self, node: Node, code: int = status.HTTP_200_OK) -> Response:
        headers = location("node", node.name) if code == status.HTTP_201_CREATED else None
        return Response(NodeSerializer(Node.objects.get(pk=node.pk)).data, status=code, headers=headers)

    def list(self, request):
        """All nodes, paginated."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        context = {**self.get_serializer_context(), "allocated": node_allocated([n.pk for n in page])}
        return self.get_paginated_response(NodeSerializer(page, many=True, context=context).data)

    def retrieve(self, request, name: str):
        """One node."""
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(request=NodeWriteSerializer, responses={201: NodeSerializer})
    def create(self, request):
        """Register a node."""
        node = services.node_create(**validated(NodeWriteSerializer, request), actor=request.user)
        return self._respond(node, status.HTTP_201_CREATED)

    @extend_schema(request=NodeWriteSerializer, responses={200: NodeSerializer})
    def update(self, request, name: str):
        """Replace a node's settings."""
        data = validated(NodeWriteSerializer, request)
        return self._respond(services.node_update(node=self.get_object(), actor=request.user, **data))

    @extend_schema(request=NodeWriteSerializer, responses={200: NodeSerializer})
    def partial_update(self, request, name: str):
        """Change some of a node's settings (e.g. cordon with unschedulable=true)."""
        data = validated(NodeWriteSerializer, request, partial=True)
        return self._respond(services.node_update(node=self.get_object(), actor=request.user, **data))

    @extend_schema(responses={204: OpenApiResponse(description="Deleted")})
    def destroy(self, request, name: str):
        """Remove a node without running tasks."""
        services.node_delete(node=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=HeartbeatSerializer, responses={200: NodeSerializer})
    @action(detail=True, methods=["post"])
    def heartbeat(self, request, name: str):
        """Record the node's current cpu/memory usage in percent (for the usage plugin)."""
        data = validated(HeartbeatSerializer, request)
        node = services.node_heartbeat(node=self.get_object(), usage_cpu=data["cpu"],
                                       usage_memory=data["memory"])
        return self._respond(node)

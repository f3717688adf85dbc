"""NodeShards: list, read by name, create, patch (If-Match), delete; staff write, everyone reads."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response

from schedweb.api.permissions import ReadAnyWriteStaff
from schedweb.api.serializers.shards import NodeShardSerializer, NodeShardWriteSerializer
from schedweb.api.versions import etag, expected_version, stale
from schedweb.api.views.base import location, validated
from schedweb.core import services
from schedweb.core.filtersets import NodeShardFilterSet
from schedweb.core.models import NodeShard
from schedweb.core.queue_services import StaleVersion


class NodeShardViewSet(viewsets.GenericViewSet):
    """NodeShards (shard.volcano.sh NodeShard), looked up by name."""

    queryset = NodeShard.objects.all()
    serializer_class = NodeShardSerializer
    permission_classes = [ReadAnyWriteStaff]
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = NodeShardFilterSet
    ordering_fields = ["name", "scheduler_name", "created"]
    ordering = ["name"]

    def _respond(self, shard: NodeShard, code: int = status.HTTP_200_OK) -> Response:
        headers = location("nodeshard", shard.name) if code == status.HTTP_201_CREATED else None
        response = Response(NodeShardSerializer(shard).data, status=code, headers=headers)
        response["ETag"] = etag(shard)
        return response

    def list(self, request):
        """All NodeShards, paginated; filter by scheduler_name or mode."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, name: str):
        """One NodeShard; its ETag is its version (If-Match on PATCH / DELETE: 412 when it changed,
        the controller's writes included)."""
        return self._respond(self.get_object())

    @extend_schema(request=NodeShardWriteSerializer, responses={201: NodeShardSerializer})
    def create(self, request):
        """Create a NodeShard."""
        shard = services.node_shard_create(**validated(NodeShardWriteSerializer, request), actor=request.user)
        return self._respond(shard, status.HTTP_201_CREATED)

    @extend_schema(request=NodeShardWriteSerializer, responses={200: NodeShardSerializer})
    def partial_update(self, request, name: str):
        """Change some of a NodeShard's fields; If-Match: see retrieve."""
        data = validated(NodeShardWriteSerializer, request, partial=True)
        shard = self.get_object()
        try:
            version = expected_version(request, shard, "NodeShard")
            shard = services.node_shard_update(shard=shard, actor=request.user, expected_version=version,
                                               **data)
        except StaleVersion as exc:
            raise stale(exc) from None
        return self._respond(shard)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted")})
    def destroy(self, request, name: str):
        """Delete a NodeShard; If-Match: see retrieve."""
        shard = self.get_object()
        try:
            services.node_shard_delete(shard=shard, actor=request.user,
                                       expected_version=expected_version(request, shard, "NodeShard"))
        except StaleVersion as exc:
            raise stale(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

"""Queues: CRUD (lookup by name), the whole tree with figures, open / close."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response
from rest_framework.serializers import DateTimeField

from schedweb.api import commands
from schedweb.api.cache import cached_json
from schedweb.api.serializers.queues import (
    QueueHistoryQuerySerializer,
    QueueHistorySerializer,
    QueueSerializer,
    QueueStateSerializer,
    QueueTreeSerializer,
    QueueWriteSerializer,
    history_body,
    queue_node,
)
from schedweb.api.versions import etag, expected_version, stale
from schedweb.api.views.base import access, location, validated
from schedweb.core import services
from schedweb.core.access import ADMIN_GROUPS, ADMIN_USERS, SUBMITTER_GROUPS, SUBMITTER_USERS
from schedweb.core.filtersets import QueueFilterSet
from schedweb.core.models import Queue
from schedweb.core.queue_services import StaleVersion
from schedweb.scheduling.selectors import queue_tree


class QueueViewSet(viewsets.GenericViewSet):
    """Queues. Reads: any signed-in user. Changes: admins of the queue or an ancestor; creating or
    deleting a queue needs admin rights on its parent (staff for top-level queues)."""

    serializer_class = QueueSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = QueueFilterSet
    ordering_fields = ["name", "weight", "priority", "created"]
    ordering = ["name"]

    def get_queryset(self) -> QuerySet:
        """The view's rows with the relations its serializer reads."""
        return Queue.objects.select_related("parent").prefetch_related(
            ADMIN_USERS, ADMIN_GROUPS, SUBMITTER_USERS, SUBMITTER_GROUPS)

    def _respond(self, queue: Queue, code: int = status.HTTP_200_OK) -> Response:
        queue = self.get_queryset().get(pk=queue.pk)
        headers = location("queue", queue.name) if code == status.HTTP_201_CREATED else None
        response = Response(QueueSerializer(queue, context=self.get_serializer_context()).data, status=code,
                            headers=headers)
        response["ETag"] = etag(queue)
        return response

    def list(self, request):
        """All queues, paginated, filterable by parent/state/search."""
        qs = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, name: str):
        """One queue; its ETag is its version (send it back as If-Match to PUT/PATCH/DELETE only
        that version: 412 when the queue has changed since)."""
        queue = self.get_object()
        response = Response(self.get_serializer(queue).data)
        response["ETag"] = etag(queue)
        return response

    def _update(self, request, partial: bool) -> Response:
        data = validated(QueueWriteSerializer, request, partial=partial)
        queue = self.get_object()
        try:
            queue = commands.queue_update(access=access(request), queue=queue, data=data,
                                          expected_version=expected_version(request, queue, "queue"))
        except StaleVersion as exc:
            raise stale(exc) from None
        return self._respond(queue)

    @extend_schema(request=QueueWriteSerializer, responses={201: QueueSerializer})
    def create(self, request):
        """Create a queue (parent by name; absent or null = top level)."""
        queue = commands.queue_create(access=access(request), data=validated(QueueWriteSerializer, request))
        return self._respond(queue, status.HTTP_201_CREATED)

    @extend_schema(request=QueueWriteSerializer, responses={200: QueueSerializer})
    def update(self, request, name: str):
        """Replace a queue's settings (absent optional keys get their defaults); If-Match: see
        retrieve."""
        return self._update(request, partial=False)

    @extend_schema(request=QueueWriteSerializer, responses={200: QueueSerializer})
    def partial_update(self, request, name: str):
        """Change some of a queue's settings; If-Match: see retrieve."""
        return self._update(request, partial=True)

    @extend_schema(responses={204: OpenApiResponse(description="Deleted")})
    def destroy(self, request, name: str):
        """Delete a queue without jobs or children (admins of the parent, staff for top level);
        If-Match: see retrieve."""
        queue = self.get_object()
        if not access(request).can_admin(queue.parent_id):
            raise PermissionDenied("Only admins of the parent queue (staff for top-level queues) may "
                                   "delete it.")
        try:
            services.queue_delete(queue=queue, actor=request.user,
                                  expected_version=expected_version(request, queue, "queue"))
        except StaleVersion as exc:
            raise stale(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _set_state(self, request, state: str) -> Response:
        validated(QueueStateSerializer, request)
        queue = self.get_object()
        if not access(request).can_admin(queue.id):
            raise PermissionDenied(f"Only admins of queue {queue.name} or its ancestors may change its "
                                   "state.")
        return self._respond(services.queue_set_state(queue=queue, state=state, actor=request.user))

    @extend_schema(request=QueueStateSerializer, responses={200: QueueSerializer})
    @action(detail=True, methods=["post"])
    def open(self, request, name: str):
        """Open the queue: it accepts and schedules new jobs."""
        return self._set_state(request, "Open")

    @extend_schema(request=QueueStateSerializer, responses={200: QueueSerializer})
    @action(detail=True, methods=["post"])
    def close(self, request, name: str):
        """Close the queue: no new jobs; running ones finish (Closing until they have)."""
        return self._set_state(request, "Closed")

    @extend_schema(parameters=[QueueHistoryQuerySerializer], responses={200: QueueHistorySerializer})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def history(self, request, name: str):
        """The queue's share history (every queue, parents included): one point per scheduling
        cycle in [since, until], its figures in output units. A window with more samples than
        `points` is downsampled: cut into `points` equal buckets, each keeping its newest sample
        (a figure a cycle really committed, never an average)."""
        from django.utils import timezone

        from schedweb.scheduling.history import DEFAULT_POINTS, queue_history

        queue = get_object_or_404(Queue, name=name)
        query = QueueHistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        until = query.validated_data.get("until") or timezone.now()
        since = query.validated_data.get("since") or until - timedelta(hours=1)
        found = queue_history(queue.name, since, until, query.validated_data.get("points") or DEFAULT_POINTS)
        return Response(QueueHistorySerializer(history_body(found)).data)

    @extend_schema(responses={200: OpenApiResponse(QueueTreeSerializer, description=(
        "The whole queue hierarchy with figures"))})
    @action(detail=False, methods=["get"], pagination_class=None, filter_backends=[])
    def tree(self, request):
        """The whole hierarchy in one response; parents' allocated/request/pending sum their subtree.

        Served from schedweb.api.cache (computed again when the data version changes; ETag/304).
        """
        return cached_json(self, request, "queue-tree", tree_body) or Response(tree_body())


def tree_body() -> dict:
    """The tree response's data: the implicit root with the top-level queues' subtrees, and
    `cycle`: {id, started} of the newest cycle whose samples give deserved / real_capability /
    share (null before the first one); allocated, request and pending_jobs are the tasks as they
    stand. The prebuilt bodies and the fast path serve this same body."""
    from schedweb.scheduling.models import QueueSample

    _, children, figures = queue_tree()
    newest = QueueSample.objects.order_by("-cycle_id").values_list("cycle_id", "cycle__started").first()
    cycle = None
    if newest is not None:
        cycle = {"id": newest[0], "started": DateTimeField().to_representation(newest[1])}
    return {"name": "root", "cycle": cycle,
            "children": [queue_node(q, children, figures) for q in children.get(None, ())]}

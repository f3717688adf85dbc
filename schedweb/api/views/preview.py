"""Previews (issue 20): `POST /api/v1/queues/{name}/preview/` answers what a queue change would do
in the next cycle, with the body of the PATCH, before anything is saved.

Validation and permissions are the edit's own: the body goes through QueueWriteSerializer
(partial, as the PATCH: 400 naming the field), only admins of the queue or an ancestor may
preview (403, as the edit), and the change itself runs through schedweb.api.commands.queue_update
(the services' checks and queue limits) in a savepoint that is rolled back
(schedweb.scheduling.queue_preview, whose docstring gives the response shape). A change the
services refuse is a 200 with `valid: false` and the `violations`, so the edit form can show them.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.api import commands, limits
from schedweb.api.serializers.queues import QueueWriteSerializer
from schedweb.api.views.base import access, validated
from schedweb.core.models import Queue
from schedweb.scheduling.queue_preview import preview_queue_change

EXAMPLE = {
    "queue": "a", "valid": True, "violations": {}, "config_version": 2, "computed_at": "2026-11-24T12:00:00Z",
    "changes": {"weight": {"before": 1, "after": 2}},
    "queues": [
        {"name": "a", "parent": None, "role": "queue", "changed": True,
         "before": {"deserved": {"cpu": 4, "memory": 4294967296},
                    "real_capability": {"cpu": 12, "memory": 51539607552},
                    "allocated": {"cpu": 4, "memory": 1073741824}, "capability": None, "guarantee": None,
                    "weight": 1, "share": 1.0, "overused": True},
         "after": {"deserved": {"cpu": 6, "memory": 4294967296},
                   "real_capability": {"cpu": 12, "memory": 51539607552},
                   "allocated": {"cpu": 6, "memory": 1610612736}, "capability": None, "guarantee": None,
                   "weight": 2, "share": 1.0, "overused": True}}],
    "jobs": {"starting": [{"job": "ns/a", "id": 1, "queue": "a", "tasks": {"a-4": "n1", "a-5": "n2"}}],
             "not_starting": [{"job": "ns/b", "id": 2, "queue": "b", "tasks": {"b-3": "n0"}}],
             "losing": [], "not_losing": []},
    "losses": [{"queue": "b", "role": "sibling", "figure": "deserved", "dim": "cpu", "before": 6,
                "after": 4}],
    "warnings": [],
}


class QueuePreviewView(APIView):
    """What a queue change would do in the next cycle (nothing is saved)."""

    @extend_schema(
        request=QueueWriteSerializer(partial=True),
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description=(
            "`valid`, `violations` {field: [message]}, `changes` {field: {before, after}}, `queues` "
            "[{name, parent, role (ancestor, queue, sibling, other), changed, before, after}] with the "
            "session's figures (deserved, real_capability, allocated, capability, guarantee, weight, "
            "share, overused), `losses` [{queue, role, figure, dim, before, after}] (other queues whose "
            "deserved or real capability shrinks), `warnings`, `jobs` {starting, not_starting, losing, "
            "not_losing}: [{job, id, queue, tasks}]"),
            examples=[OpenApiExample("weight raised", value=EXAMPLE)])},
        operation_id="v1_queues_preview_create", summary="Preview a queue change (nothing is saved)",
    )
    def post(self, request, name: str):
        """Preview the change the body (as for PATCH queues/{name}/) describes."""
        queue = Queue.objects.filter(name=name).first()
        if queue is None:
            raise NotFound(f"No queue {name!r}.")
        data = validated(QueueWriteSerializer, request, partial=True)
        acl = access(request)
        if not acl.can_admin(queue.id):  # before any work: previews cost two sessions
            raise PermissionDenied(f"Only admins of queue {queue.name} or its ancestors may change it.")
        with limits.dry_run(request.user):  # a user's concurrent previews are capped
            return Response(preview_queue_change(
                queue, lambda: commands.queue_update(access=acl, queue=queue, data=data)))

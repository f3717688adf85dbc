"""Who the caller is and which queues they may manage or submit to (for portals' forms)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.core.access import queue_access
from schedweb.core.models import Queue


class MeView(APIView):
    """GET the signed-in user with their effective (inherited) queue rights."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        """Username, staff flag, queues they administer and leaf queues they may submit to."""
        access = queue_access(request)
        queues = list(Queue.objects.order_by("name").values_list("id", "name", "parent_id"))
        parents = {parent for _, _, parent in queues if parent is not None}
        user = request.user
        leaves = [(qid, name) for qid, name, _ in queues if qid not in parents]
        return Response({
            "username": user.get_username(),
            "is_staff": bool(user.is_staff or user.is_superuser),
            "groups": sorted(user.groups.values_list("name", flat=True)),
            "admin_queues": [name for qid, name, _ in queues if access.can_admin(qid)],
            "submit_queues": [name for qid, name in leaves if access.can_submit(qid)],
        })

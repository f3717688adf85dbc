"""Jobs (PodGroups with their tasks) and task status reports from node agents."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response

from schedweb.api import commands
from schedweb.api.filtersets import JobFilterSet, TaskFilterSet
from schedweb.api.permissions import ReadAnyWriteStaff
from schedweb.api.serializers.jobs import (
    JobDetailSerializer,
    JobSerializer,
    JobSubmitSerializer,
    TaskSerializer,
    TaskStatusSerializer,
)
from schedweb.api.views.base import access, validated
from schedweb.core import services
from schedweb.core.models import Job, Task

IDEMPOTENCY_HEADER = "Idempotency-Key"


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Jobs. Anyone signed in reads; submitters of a queue (or an ancestor) submit into its leaves
    and cancel their own jobs; queue admins cancel any job under their queues."""

    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = JobFilterSet
    ordering_fields = ["created", "updated", "name", "namespace", "phase", "queue__name", "min_member"]
    ordering = ["-created", "-id"]

    def get_queryset(self) -> QuerySet:
        """The view's rows with the relations its serializer reads."""
        qs = Job.objects.select_related("queue", "priority_class", "submitted_by")
        if self.action == "list":
            qs = qs.annotate(
                task_count=Count("tasks"),
                running_count=Count("tasks", filter=Q(tasks__status="Running")),
                pending_count=Count("tasks", filter=Q(tasks__status="Pending")),
            )
        elif self.action == "retrieve":
            qs = qs.prefetch_related("tasks__node")
        return qs

    def get_serializer_class(self):
        """Lists use the light serializer, other actions the detail one."""
        return JobSerializer if self.action == "list" else JobDetailSerializer

    def _detail(self, job: Job, code: int = status.HTTP_200_OK, headers: dict | None = None) -> Response:
        job = Job.objects.select_related("queue", "priority_class", "submitted_by").prefetch_related(
            "tasks__node").get(pk=job.pk)
        return Response(JobDetailSerializer(job, context=self.get_serializer_context()).data, status=code,
                        headers=headers)

    @extend_schema(
        request=JobSubmitSerializer, responses={201: JobDetailSerializer},
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, description=(
            "Retries with the same key return the first job (same status, header Idempotent-Replayed)."))],
    )
    def create(self, request):
        """Submit a PodGroup with all its tasks in one request."""
        key = (request.headers.get(IDEMPOTENCY_HEADER) or "").strip() or None
        if key is not None and len(key) > 255:
            raise serializers.ValidationError({IDEMPOTENCY_HEADER: ["At most 255 characters."]})
        data = validated(JobSubmitSerializer, request)
        job, created = commands.job_submit(access=access(request), data=data, idempotency_key=key)
        return self._detail(job, status.HTTP_201_CREATED,
                            headers=None if created else {"Idempotent-Replayed": "true"})

    def _cancel(self, request, pk) -> Job:
        job = self.get_object()
        if not access(request).can_cancel(job):
            raise PermissionDenied("Only the submitter or an admin of the job's queue may cancel it.")
        return services.job_cancel(job=job, actor=request.user)

    @extend_schema(responses={204: OpenApiResponse(description="Cancelled; its tasks are released")})
    def destroy(self, request, pk=None):
        """Cancel the job (same as POST .../cancel/)."""
        self._cancel(request, pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: JobDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel the job, releasing its tasks; returns the cancelled job."""
        return self._detail(self._cancel(request, pk))


class TaskViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Tasks (pods). Node agents (staff or `core.change_task`) report Running / Succeeded / Failed."""

    serializer_class = TaskSerializer
    permission_classes = [ReadAnyWriteStaff]
    agent_perms = {"status": "core.change_task"}
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = TaskFilterSet
    ordering_fields = ["created", "name", "status"]
    ordering = ["id"]

    def get_queryset(self) -> QuerySet:
        """The view's rows with the relations its serializer reads."""
        return Task.objects.select_related("job", "node")

    @extend_schema(request=TaskStatusSerializer, responses={200: TaskSerializer})
    @action(detail=True, methods=["post"])
    def status(self, request, pk=None):
        """Report the task's new status; illegal transitions are a 400 naming `status`."""
        data = validated(TaskStatusSerializer, request)
        task = services.task_set_status(task=self.get_object(), status=data["status"])
        task = self.get_queryset().get(pk=task.pk)
        return Response(TaskSerializer(task, context=self.get_serializer_context()).data)

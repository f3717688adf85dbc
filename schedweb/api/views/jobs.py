"""Jobs (PodGroups with their tasks) and task status reports from node agents."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.filters import OrderingFilter
from rest_framework.response import Response

from schedweb.api import commands, limits, pending_gate
from schedweb.api.cache import cached_json
from schedweb.api.exceptions import Conflict, django_validation_error_fields
from schedweb.api.job_id_ranges import ApiJobFilterSet
from schedweb.api.permissions import ReadAnyWriteStaff
from schedweb.api.serializers.cycle_ref import newest_cycle
from schedweb.api.serializers.jobs import (
    JobCreatedSerializer,
    JobDetailSerializer,
    JobSerializer,
    JobSubmitSerializer,
    TaskSerializer,
    TaskStatusSerializer,
    created_representation,
    validate_submission,
    with_task_counts,
)
from schedweb.api.views.base import access, location, validated
from schedweb.core import services
from schedweb.core.filtersets import TaskFilterSet
from schedweb.core.job_services import JobStateConflict, job_delete, job_resume, job_suspend
from schedweb.core.models import TERMINAL_JOB_PHASES, Job, Task

IDEMPOTENCY_HEADER = "Idempotency-Key"


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Jobs. Anyone signed in reads; submitters of a queue (or an ancestor) submit into its leaves
    and cancel their own jobs; queue admins cancel any job under their queues."""

    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = ApiJobFilterSet
    ordering_fields = ["created", "updated", "name", "namespace", "phase", "queue__name", "min_member"]
    ordering = ["-created", "-id"]

    def get_queryset(self) -> QuerySet:
        """The view's rows with the relations its serializer reads."""
        # Lists get their task counts per page (list below), not by a GROUP BY of every match;
        # the detail serializer reads one bounded page of tasks itself.
        return Job.objects.select_related("queue", "priority_class", "submitted_by")

    def get_serializer_class(self):
        """Lists use the light serializer, other actions the detail one."""
        return JobSerializer if self.action == "list" else JobDetailSerializer

    @extend_schema(description=(
        "Jobs, paginated and filtered; each with its task, running and pending counts. "
        "`phase` is the PodGroup phase as stored: a job the dashboard shows as waiting may be "
        "`Pending` (not admitted yet) or `Inqueue` (admitted, its tasks not started), so "
        "`?phase=Pending` alone misses the admitted ones; `?state=waiting` selects both (Pending + "
        "Inqueue), `?state=finished` Completed + Cancelled, and a phase name is a state too. "
        "`reason_code` is one of the scheduler's codes (NeverFits: can never run as submitted). "
        "An unknown value of any filter (`queue=nope`, `reason_code=bogus`, `state=bogus`), an "
        "unknown `ordering` and a bad `limit` / `offset` are a 400 naming the parameter."))
    def list(self, request, *args, **kwargs):
        """Jobs, paginated and filtered; each with its task, running and pending counts.

        Served from schedweb.api.cache (computed again when the data version changes; ETag/304).
        """
        return cached_json(self, request, "job-list", self._list_data) or Response(self._list_data())

    def _list_data(self) -> dict:
        with one_snapshot():
            context = self._context()
            queryset = self.filter_queryset(self.get_queryset())
            page = self.paginate_queryset(queryset)
            if page is None:  # pagination switched off: the whole list
                return JobSerializer(with_task_counts(list(queryset)), many=True, context=context).data
            with_task_counts(page)
            data = JobSerializer(page, many=True, context=context).data
            return self.paginator.get_paginated_response(data).data

    def _context(self) -> dict:
        """The serializer context with `cycle`, read before the rows (see JobSerializer.cycle)."""
        return {**self.get_serializer_context(), "cycle": newest_cycle()}

    def retrieve(self, request, *args, **kwargs):
        """One job with its first tasks, reason timeline, forecast and the cycle it reflects."""
        with one_snapshot():
            context = self._context()
            return Response(JobDetailSerializer(self.get_object(), context=context).data)

    def _detail(self, job: Job, code: int = status.HTTP_200_OK, headers: dict | None = None) -> Response:
        context = self._context()
        job = Job.objects.select_related("queue", "priority_class", "submitted_by").get(pk=job.pk)
        return Response(JobDetailSerializer(job, context=context).data, status=code, headers=headers)

    @extend_schema(
        request=JobSubmitSerializer,
        responses={201: JobCreatedSerializer, 409: OpenApiResponse(description=(
            "`conflict`: a job of this namespace and name exists; `idempotency_key_reused`: the "
            "Idempotency-Key came before with a different body"))},
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, description=(
            "Retries with the same key and the same body return the first job (same status, header "
            "Idempotent-Replayed); the same key with another body is a 409 idempotency_key_reused.")),
            OpenApiParameter("dry_run", bool, description=(
                "true: write nothing; answer where the job would go in the next cycle on the current "
                "state (bound to which nodes, pending with which reason, or NeverFits) and its "
                "estimated start (schedweb.scheduling.submit_preview)"))],
    )
    def create(self, request):
        """Submit a PodGroup with all its tasks in one request (at most MAX_TASKS_PER_JOB tasks;
        a task entry with `replicas: N` stands for N tasks `<job>-<task>-<index>`).

        A job that can never run as submitted is accepted with `warnings` (NeverFits, with the
        limiting dimension and both figures), as Kubernetes accepts an unschedulable pod. Every
        field problem is listed at once; a taken namespace/name is a 409 `conflict`.
        """
        # At MAX_PENDING_JOBS_PER_USER: the 429 before the body is read (schedweb.api.pending_gate).
        if request.query_params.get("dry_run", "").lower() in ("true", "1"):
            from schedweb.api.job_dry_run import preview_submission

            pending_gate.check_job(request.user, None)
            data = validate_submission(request.data)
            with limits.dry_run(request.user):  # capped per user; MAX_TASKS_PER_DRY_RUN tasks
                return Response(preview_submission(data, request.user))
        key = idempotency_key(request)
        pending_gate.check_job(request.user, key)  # a known key goes on to its replay
        data = validate_submission(request.data)
        job, created = commands.job_submit(access=access(request), data=data, idempotency_key=key,
                                           request_hash=commands.body_hash(request.data) if key else "",
                                           warnings=True)
        if not created:
            return self._detail(job, status.HTTP_201_CREATED,
                                headers={"Idempotent-Replayed": "true", **location("job", job.pk)})
        # Built from what was written: nothing is read back.
        body = created_representation(job, self.get_serializer_context())
        return Response(body, status=status.HTTP_201_CREATED, headers=location("job", job.pk))

    def _cancel(self, request, pk) -> Job:
        job = self.get_object()
        if not access(request).can_cancel(job):
            raise PermissionDenied("Only the submitter or an admin of the job's queue may cancel it.")
        return services.job_cancel(job=job, actor=request.user)

    def _change(self, request, service, verb: str) -> Job:
        """Suspend, resume or delete under the cancel rule; a job in the wrong state is a 409."""
        job = self.get_object()
        if not access(request).can_cancel(job):
            raise PermissionDenied(f"Only the submitter or an admin of the job's queue may {verb} it.")
        try:
            return service(job=job, actor=request.user)
        except JobStateConflict as exc:
            raise Conflict(django_validation_error_fields(exc)) from None

    @extend_schema(responses={204: OpenApiResponse(description=(
        "An unfinished job is cancelled (its tasks are released); a finished one is deleted with "
        "its tasks (vcctl job delete)")), 409: OpenApiResponse(description=(
            "`conflict`: the finished job still has tasks being released from their nodes"))})
    def destroy(self, request, pk=None, **kwargs):
        """Cancel the job (same as POST .../cancel/); a finished job is deleted (audited)."""
        job = self.get_object()
        if job.phase in TERMINAL_JOB_PHASES:
            self._change(request, job_delete, "delete")
        else:
            self._cancel(request, pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: JobDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None, **kwargs):
        """Cancel the job, releasing its tasks; returns the cancelled job."""
        return self._detail(self._cancel(request, pk))

    @extend_schema(request=None, responses={200: JobDetailSerializer, 409: OpenApiResponse(
        description="`conflict`: the job has finished or is already suspended")})
    @action(detail=True, methods=["post"])
    def suspend(self, request, pk=None, **kwargs):
        """Suspend the job (Volcano's AbortJob): phase `Aborted` (shown as Suspended), reason
        `Suspended`; tasks holding a node are released and wait again; never scheduled until resumed."""
        return self._detail(self._change(request, job_suspend, "suspend"))

    @extend_schema(request=None, responses={200: JobDetailSerializer, 409: OpenApiResponse(
        description="`conflict`: the job is not suspended")})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None, **kwargs):
        """Resume a suspended job (Volcano's ResumeJob): Pending again, scheduled as a new gang."""
        return self._detail(self._change(request, job_resume, "resume"))


@contextmanager
def one_snapshot() -> Iterator[None]:
    """On PostgreSQL outside a transaction, the body's reads in one REPEATABLE READ transaction:
    the cycle it names is then exactly the one its rows reflect (a cycle commits its decisions
    and its CycleRun together). Elsewhere the cycle is read first: the rows reflect it or a
    newer one."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def idempotency_key(request) -> str | None:
    """The request's Idempotency-Key header (None when absent or blank); a 400 above 255 characters."""
    key = (request.headers.get(IDEMPOTENCY_HEADER) or "").strip() or None
    if key is not None and len(key) > 255:
        raise serializers.ValidationError({IDEMPOTENCY_HEADER: ["At most 255 characters."]})
    return key


class NamespacedJobViewSet(JobViewSet):
    """The same job operations addressed as `/api/v1/namespaces/{namespace}/jobs/{name}/`."""

    def get_object(self) -> Job:
        """The job of this namespace and name (404 otherwise)."""
        job = self.get_queryset().filter(namespace=self.kwargs["namespace"], name=self.kwargs["name"]).first()
        if job is None:
            raise NotFound(f"No job {self.kwargs['namespace']}/{self.kwargs['name']}.")
        self.check_object_permissions(self.request, job)
        return job

    @extend_schema(parameters=[OpenApiParameter("namespace", str, OpenApiParameter.PATH),
                               OpenApiParameter("name", str, OpenApiParameter.PATH)],
                   responses={200: JobDetailSerializer})
    def retrieve(self, request, *args, **kwargs):
        """One job by namespace and name, with its first tasks and reason timeline."""
        return super().retrieve(request, *args, **kwargs)


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
        return Task.objects.select_related("job", "node").prefetch_related("spec")

    @extend_schema(request=TaskStatusSerializer, responses={200: TaskSerializer})
    @action(detail=True, methods=["post"])
    def status(self, request, pk=None):
        """Report the task's new status; illegal transitions are a 400 naming `status`."""
        data = validated(TaskStatusSerializer, request)
        task = services.task_set_status(task=self.get_object(), status=data["status"])
        task = self.get_queryset().get(pk=task.pk)
        return Response(TaskSerializer(task, context=self.get_serializer_context()).data)

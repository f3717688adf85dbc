"""Import and export of Volcano manifests (Queue, PodGroup + Pods, batch Job) as YAML."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.api import commands
from schedweb.api.exceptions import django_validation_error_fields
from schedweb.api.manifest_export import dump_documents, job_to_podgroup, job_to_vcjob, queue_to_manifest
from schedweb.api.manifests import ManifestError, load_documents, split_documents
from schedweb.api.parsers import YamlTextParser, YamlTextParserAlias, YamlTextParserText
from schedweb.api.serializers.cluster import ManifestImportSerializer
from schedweb.api.serializers.jobs import JobSubmitSerializer
from schedweb.api.serializers.queues import QueueWriteSerializer
from schedweb.api.views.base import access
from schedweb.core.models import Job, PriorityClass, Queue

EXPORT_KINDS = ("Queue", "PodGroup", "Job")
FINISHED_PHASES = ("Completed", "Cancelled")


def _validate(serializer_class, data: dict, path: str) -> dict:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise serializers.ValidationError({path: serializer.errors})
    return dict(serializer.validated_data)


def _prefixed(path: str, exc: ValidationError) -> serializers.ValidationError:
    fields = django_validation_error_fields(exc)
    return serializers.ValidationError({f"{path}.{k}": v for k, v in fields.items()})


class ManifestImportView(APIView):
    """POST Volcano YAML (raw body, or JSON {"yaml": ...}); all documents or nothing is applied.

    Existing queues are updated (like `kubectl apply`), jobs are created. `?dry_run=true` checks
    everything and rolls back. Permissions are those of the equivalent JSON requests.
    """

    parser_classes = [YamlTextParser, YamlTextParserAlias, YamlTextParserText, JSONParser]

    @extend_schema(
        request={"application/yaml": OpenApiTypes.STR, "application/json": ManifestImportSerializer},
        parameters=[OpenApiParameter("dry_run", bool, description="Validate and roll back.")],
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        """Apply the manifests; 400 names `documents[i].field` of the first bad document."""
        text = request.data
        if not isinstance(text, str):
            body = ManifestImportSerializer(data=text)
            body.is_valid(raise_exception=True)
            text = body.validated_data["yaml"]
        dry_run = request.query_params.get("dry_run", "").lower() in ("1", "true", "yes")
        user_access = access(request)
        result = {"dry_run": dry_run, "queues_created": [], "queues_updated": [], "jobs_created": []}
        with transaction.atomic():
            try:
                docs = load_documents(text)
                priority_classes = dict(PriorityClass.objects.values_list("name", "value"))
                queues, jobs = split_documents(docs, priority_classes)
            except ManifestError as exc:
                raise serializers.ValidationError(django_validation_error_fields(exc)) from None
            for data, path in queues:
                existing = Queue.objects.filter(name=data["name"]).first()
                try:
                    if existing is None:
                        valid = _validate(QueueWriteSerializer, data, path)
                        commands.queue_create(access=user_access, data=valid)
                        result["queues_created"].append(data["name"])
                    else:
                        valid = _validate(QueueWriteSerializer, data, path)
                        commands.queue_update(access=user_access, queue=existing, data=valid)
                        result["queues_updated"].append(data["name"])
                except ValidationError as exc:
                    raise _prefixed(path, exc) from None
            for data, path in jobs:
                valid = _validate(JobSubmitSerializer, data, path)
                try:
                    job, _ = commands.job_submit(access=user_access, data=valid)
                except ValidationError as exc:
                    raise _prefixed(path, exc) from None
                result["jobs_created"].append(f"{job.namespace}/{job.name}")
            if dry_run:
                transaction.set_rollback(True)
        return Response(result)


class ManifestExportView(APIView):
    """GET queues and jobs as multi-document Volcano YAML."""

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, many=True, enum=EXPORT_KINDS,
                             description="Kinds to export (repeatable); default Queue and Job."),
            OpenApiParameter("queue", str, description="Only this queue's jobs (and the queue)."),
            OpenApiParameter("namespace", str, description="Only jobs of this namespace."),
            OpenApiParameter("finished", bool, description="Include Completed/Cancelled jobs."),
        ],
        responses={(200, "application/yaml"): OpenApiTypes.STR},
    )
    def get(self, request):
        """Queues (parents first) then jobs, as PodGroup+Pods or batch Jobs."""
        kinds = request.query_params.getlist("kind") or ["Queue", "Job"]
        bad = sorted(set(kinds) - set(EXPORT_KINDS))
        if bad:
            raise serializers.ValidationError({"kind": [f"Unknown kind(s) {', '.join(bad)}; "
                                                        f"expected {', '.join(EXPORT_KINDS)}."]})
        if "PodGroup" in kinds and "Job" in kinds:
            raise serializers.ValidationError({"kind": ["Jobs export as PodGroup or as Job, not both."]})
        docs: list[dict] = []
        queue_name = request.query_params.get("queue")
        if "Queue" in kinds:
            queues = list(Queue.objects.select_related("parent").order_by("name"))
            if queue_name:
                queues = [q for q in queues if q.name == queue_name]
            docs.extend(queue_to_manifest(q) for q in _parents_first(queues))
        if "PodGroup" in kinds or "Job" in kinds:
            jobs = Job.objects.select_related("queue", "priority_class").prefetch_related("tasks").order_by(
                "namespace", "name")
            if queue_name:
                jobs = jobs.filter(queue__name=queue_name)
            if request.query_params.get("namespace"):
                jobs = jobs.filter(namespace=request.query_params["namespace"])
            if request.query_params.get("finished", "").lower() not in ("1", "true", "yes"):
                jobs = jobs.exclude(phase__in=FINISHED_PHASES)
            for job in jobs:
                tasks = sorted(job.tasks.all(), key=lambda t: t.id)
                if "Job" in kinds:
                    docs.append(job_to_vcjob(job, tasks))
                else:
                    docs.extend(job_to_podgroup(job, tasks))
        return HttpResponse(dump_documents(docs), content_type="application/yaml; charset=utf-8")


def _parents_first(queues: list[Queue]) -> list[Queue]:
    """Sort so every parent precedes its children (by depth, then name)."""
    by_id = {q.id: q for q in queues}

    def depth(q: Queue) -> int:
        """Number of ancestors within the exported set."""
        d, seen = 0, set()
        while q.parent_id in by_id and q.parent_id not in seen:
            seen.add(q.parent_id)
            q, d = by_id[q.parent_id], d + 1
        return d

    return sorted(queues, key=lambda q: (depth(q), q.name))

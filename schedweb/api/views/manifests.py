"""Import (apply) and export of Volcano YAML: PriorityClass, Queue, NodeShard, PodGroup + Pods,
batch Job."""

from __future__ import annotations

from contextlib import nullcontext

from django.db import transaction
from django.db.models import Prefetch
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.api import limits, pending_gate
from schedweb.api.exceptions import error_body, sanitize
from schedweb.api.manifest_export import (
    QUEUE_JSON_FIELDS,
    TASK_JSON_FIELDS,
    ExportProblem,
    dump_documents,
    job_to_podgroup,
    job_to_vcjob,
    json_columns,
    queue_to_manifest,
    with_status,
)
from schedweb.api.manifests_apply import ApplyConflict, apply_manifest, read_documents
from schedweb.api.manifests_priority import priority_class_to_manifest
from schedweb.api.manifests_shard import node_shard_to_manifest
from schedweb.api.parsers import BoundedJSONParser, YamlTextParser, YamlTextParserAlias, YamlTextParserText
from schedweb.api.serializers.cluster import ManifestImportSerializer
from schedweb.api.views.base import access
from schedweb.core.choices import TERMINAL_JOB_PHASES
from schedweb.core.models import Job, NodeShard, PriorityClass, Queue, Task, TaskSpec
from schedweb.scheduling.models import JobCondition

EXPORT_KINDS = ("PriorityClass", "Queue", "NodeShard", "PodGroup", "Job")
DEFAULT_EXPORT_KINDS = ["PriorityClass", "Queue", "NodeShard", "Job"]


class ManifestImportView(APIView):
    """POST Volcano YAML (raw body, or JSON {"yaml": ...}); all documents or nothing is applied.

    Like `kubectl apply`: each object is created, updated or unchanged (manifests_apply says what
    may change; a change that is not allowed is a 409 naming its fields), and answered 200 (an
    apply, not a create: no `Location`); each entry of `changes` carries `url`, its object's
    detail path (a dry run's entries none: nothing was written). `?dry_run=true` checks
    everything, reports the same outcome with field diffs, and writes nothing. Permissions are
    those of the equivalent JSON requests.
    """

    parser_classes = [YamlTextParser, YamlTextParserAlias, YamlTextParserText, BoundedJSONParser]

    @extend_schema(
        request={"application/yaml": OpenApiTypes.STR, "application/json": ManifestImportSerializer},
        parameters=[OpenApiParameter("dry_run", bool, description="What would change (diffs); no writes.")],
        responses={200: OpenApiTypes.OBJECT,
                   409: OpenApiResponse(description="A change the object does not allow (`conflict`, "
                                                    "fields by manifest path).")},
    )
    def post(self, request):
        """Apply the manifests; 400 names the manifest path (`documents[i].spec...`) of each bad field."""
        text = request.data
        if not isinstance(text, str):
            body = ManifestImportSerializer(data=text)
            body.is_valid(raise_exception=True)
            text = body.validated_data["yaml"]
        dry_run = request.query_params.get("dry_run", "").lower() in ("1", "true", "yes")
        docs = read_documents(text)
        # At MAX_PENDING_JOBS_PER_USER, a manifest that may create a job is a 429 before any of
        # its documents is checked (schedweb.api.pending_gate).
        pending_gate.check_manifest(request.user, docs)
        conflict: ApplyConflict | None = None
        # A dry run holds one of the user's slots and makes at most MAX_TASKS_PER_DRY_RUN tasks.
        with limits.dry_run(request.user) if dry_run else nullcontext(), transaction.atomic():
            try:
                result = apply_manifest(docs, access=access(request), dry_run=dry_run)
            except ApplyConflict as exc:
                conflict = exc
                transaction.set_rollback(True)
            if dry_run:
                transaction.set_rollback(True)
        if conflict is not None:
            return Response(sanitize(error_body("conflict", conflict.message, conflict.fields)),
                            status=status.HTTP_409_CONFLICT)
        if not dry_run:
            located(result["changes"])
        return Response(result)


def located(changes: list[dict]) -> None:
    """Give each change its object's detail path, `url` (a job's by id: one query)."""
    from django.urls import reverse

    jobs = [c for c in changes if c["kind"] in ("Job", "PodGroup")]
    ids: dict[tuple[str, str], int] = {}
    if jobs:
        names = {tuple(c["name"].split("/", 1)) for c in jobs}
        rows = Job.objects.filter(namespace__in={ns for ns, _ in names}, name__in={n for _, n in names})
        ids = {(ns, n): pk for pk, ns, n in rows.values_list("id", "namespace", "name") if (ns, n) in names}
    for change in changes:
        kind = change["kind"]
        if kind == "Queue":
            change["url"] = reverse("api:queue-detail", args=[change["name"]])
        elif kind == "PriorityClass":
            change["url"] = reverse("api:priorityclass-detail", args=[change["name"]])
        elif kind == "NodeShard":
            change["url"] = reverse("api:nodeshard-detail", args=[change["name"]])
        else:
            pk = ids.get(tuple(change["name"].split("/", 1)))
            change["url"] = reverse("api:job-detail", args=[pk]) if pk is not None else None


class ManifestExportView(APIView):
    """GET queues and jobs as multi-document Volcano YAML."""

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, many=True, enum=EXPORT_KINDS,
                             description="Kinds (repeatable); default PriorityClass, Queue, NodeShard "
                                         "and Job."),
            OpenApiParameter("queue", str, description="Only this queue's jobs (and the queue)."),
            OpenApiParameter("namespace", str, description="Only jobs of this namespace."),
            OpenApiParameter("finished", bool, description="Include Completed/Cancelled jobs."),
        ],
        responses={(200, "application/yaml"): OpenApiTypes.STR},
    )
    def get(self, request):
        """Priority classes, queues (parents first), NodeShards, then jobs, as PodGroup+Pods or
        batch Jobs."""
        kinds = request.query_params.getlist("kind") or DEFAULT_EXPORT_KINDS
        bad = sorted(set(kinds) - set(EXPORT_KINDS))
        if bad:
            raise serializers.ValidationError({"kind": [f"Unknown kind(s) {', '.join(bad)}; "
                                                        f"expected {', '.join(EXPORT_KINDS)}."]})
        if "PodGroup" in kinds and "Job" in kinds:
            raise serializers.ValidationError({"kind": ["Jobs export as PodGroup or as Job, not both."]})
        docs: list[dict] = []
        skipped: list[str] = []
        queue_name = request.query_params.get("queue")
        if "PriorityClass" in kinds:
            docs.extend(priority_class_to_manifest(pc) for pc in PriorityClass.objects.order_by("name"))
        if "Queue" in kinds:
            queues = list(Queue.objects.select_related("parent").defer(*QUEUE_JSON_FIELDS).annotate(
                **json_columns(QUEUE_JSON_FIELDS)).order_by("name"))
            if queue_name:
                queues = [q for q in queues if q.name == queue_name]
            for queue in _parents_first(queues):
                _export(skipped, f"Queue {queue.name}", lambda q=queue: [queue_to_manifest(q)], docs)
        if "NodeShard" in kinds and not queue_name:
            docs.extend(node_shard_to_manifest(shard) for shard in NodeShard.objects.order_by("name"))
        if "PodGroup" in kinds or "Job" in kinds:
            # Each spec read once, as text (decoded by the export), shared by the tasks that have it.
            specs = TaskSpec.objects.defer(*TASK_JSON_FIELDS).annotate(**json_columns(TASK_JSON_FIELDS))
            tasks = Task.objects.prefetch_related(Prefetch("spec", queryset=specs))
            jobs = Job.objects.select_related("queue", "priority_class").prefetch_related(
                Prefetch("tasks", queryset=tasks),
                Prefetch("conditions", queryset=JobCondition.objects.order_by("id")),
            ).order_by("namespace", "name")
            if queue_name:
                jobs = jobs.filter(queue__name=queue_name)
            if request.query_params.get("namespace"):
                jobs = jobs.filter(namespace=request.query_params["namespace"])
            if request.query_params.get("finished", "").lower() not in ("1", "true", "yes"):
                jobs = jobs.exclude(phase__in=TERMINAL_JOB_PHASES)
            for job in jobs:
                tasks = sorted(job.tasks.all(), key=lambda t: t.id)
                build = (lambda j=job, t=tasks: [with_status(job_to_vcjob(j, t), j)]) \
                    if "Job" in kinds else (lambda j=job, t=tasks: _podgroup_with_status(j, t))
                _export(skipped, f"Job {job.namespace}/{job.name}", build, docs)
        # An object that cannot be written (stored data nested too deep) is left out with a comment
        # naming it and why; every other object is exported.
        head = "".join(f"# skipped {line}\n" for line in skipped)
        response = HttpResponse(head + dump_documents(docs), content_type="application/yaml; charset=utf-8")
        if skipped:
            response["X-Export-Skipped"] = str(len(skipped))
        return response


def _podgroup_with_status(job: Job, tasks: list[Task]) -> list[dict]:
    """The PodGroup (with its status conditions) and its Pods."""
    docs = job_to_podgroup(job, tasks)
    with_status(docs[0], job)
    return docs


def _export(skipped: list[str], label: str, build, docs: list[dict]) -> None:
    """Append the documents `build()` returns, or note `label` in `skipped` with its problem."""
    try:
        docs.extend(build())
    except ExportProblem as exc:
        skipped.append(f"{label}: {exc}")


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

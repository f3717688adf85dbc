"""Manifest import as `kubectl apply`: each object is created, updated or left unchanged.

Order: PriorityClasses, Queues (parents first), NodeShards, then jobs (PodGroups, batch Jobs). An object that
exists is compared with what the manifest asks for, both written as the export writes them: no
difference = `unchanged` (nothing written), else `updated` with a field diff by manifest path.
What may change: a queue's spec and state; a NodeShard's spec and schedweb.io annotations (its
status is never imported; staff only, as over the API); a PriorityClass's description and globalDefault (its
value and preemptionPolicy are immutable, as in Kubernetes); a job's whole spec before it has
started, only minAvailable, the tasks' minAvailable, priorityClassName and metadata after
(schedweb.core.job_apply). A change that is not allowed is an ApplyConflict (409) naming every
such field. Errors name manifest paths (`documents[1].spec.tasks[0].template.spec.containers`).
The caller runs `apply_manifest` in one transaction (all or nothing; a dry run rolls it back).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied

from schedweb.api import commands
from schedweb.api.exceptions import django_validation_error_fields, flatten_errors
from schedweb.api.manifest_export import job_to_podgroup, job_to_vcjob, queue_to_manifest
from schedweb.api.manifests import Parsed, parse_manifest, queue_manifest_path
from schedweb.api.manifests_admission import admit_queue
from schedweb.api.manifests_base import ManifestError, load_documents
from schedweb.api.manifests_diff import diff_docs, immutable_when_started
from schedweb.api.manifests_priority import manifest_path as pc_manifest_path
from schedweb.api.manifests_priority import priority_class_to_manifest
from schedweb.api.manifests_shard import manifest_path as shard_manifest_path
from schedweb.api.manifests_shard import node_shard_to_manifest, release_first
from schedweb.api.manifests_vcjob import JobDoc
from schedweb.api.serializers.cluster import PriorityClassSerializer
from schedweb.api.serializers.jobs import JobSubmitSerializer
from schedweb.api.serializers.queues import QueueWriteSerializer
from schedweb.api.serializers.shards import NodeShardWriteSerializer
from schedweb.core import services
from schedweb.core.access import QueueAccess
from schedweb.core.default_queue import (
    default_queue_name,
    ensure_default_queue,
    global_default_priority_class,
)
from schedweb.core.job_apply import job_started
from schedweb.core.job_services import _check_task
from schedweb.core.models import TERMINAL_JOB_PHASES, Job, NodeShard, PriorityClass, Queue, Task
from schedweb.core.validation import parse_resources

TASK_MODEL_FIELDS = ("name", "role", "request", "priority", "preemption_policy", "preemptable", "labels",
                     "node_selector", "tolerations", "affinity", "topology_spread_constraints", "duration")
PC_IMMUTABLE = {"value": "a PriorityClass's value may not be changed in an update (Kubernetes)",
                "preemptionPolicy": "a PriorityClass's preemptionPolicy is immutable (Kubernetes)"}


class ApplyConflict(Exception):
    """A change the object does not allow (409 `conflict`); `fields` names each manifest path."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.message, self.fields = message, fields


def _mapped(errors: dict[str, list[str]], to_path) -> serializers.ValidationError:
    out: dict[str, list[str]] = {}
    for key, messages in errors.items():
        out.setdefault(to_path(key), []).extend(messages)
    return serializers.ValidationError(out)


def _validate(serializer_class, data: dict, to_path) -> dict:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise _mapped(flatten_errors(serializer.errors), to_path)
    return dict(serializer.validated_data)


class _Apply:
    """One manifest applied (in the caller's transaction); `result` is the response body."""

    def __init__(self, access: QueueAccess, dry_run: bool) -> None:
        self.access, self.user = access, access.user
        self.result: dict[str, Any] = {"dry_run": dry_run}
        for kind in ("priority_classes", "queues", "node_shards", "jobs"):
            for verb in ("created", "updated", "unchanged"):
                self.result[f"{kind}_{verb}"] = []
        self.result["changes"] = []

    def record(self, kind: str, key: str, name: str, path: str, action: str,
               diff: dict | None = None) -> None:
        """Note one object's outcome (lists by kind and verb, and the per-document change)."""
        self.result[f"{key}_{action}"].append(name)
        self.result["changes"].append({"document": path, "kind": kind, "name": name, "action": action,
                                       "diff": diff or {}})

    def run(self, parsed: Parsed) -> dict[str, Any]:
        """Apply everything in order; returns the response body."""
        for data, path in parsed.priority_classes:
            self.priority_class(data, path)
        for data, path in parsed.queues:
            self.queue(data, path)
        stored = dict(NodeShard.objects.values_list("name", "nodes_desired"))
        for data, path in release_first(parsed.node_shards, stored):
            self.node_shard(data, path)
        self._new_jobs: list[tuple[JobDoc, dict]] = []
        for job in parsed.jobs:
            self.job(job)
        self._submit_new_jobs()
        return self.result

    # ------------------------------------------------------------------ priority classes
    def priority_class(self, data: dict, path: str) -> None:
        """Create, update (description, globalDefault) or leave a PriorityClass."""
        def to_path(key: str) -> str:
            return pc_manifest_path(path, key)

        valid = _validate(PriorityClassSerializer, data, to_path)
        existing = PriorityClass.objects.filter(name=valid["name"]).first()
        try:
            if existing is None:
                self._staff_only()
                services.priority_class_create(**valid, actor=self.user)
                self.record("PriorityClass", "priority_classes", valid["name"], path, "created")
                return
            diff = diff_docs(priority_class_to_manifest(existing),
                             priority_class_to_manifest(SimpleNamespace(**valid)))
            if not diff:
                self.record("PriorityClass", "priority_classes", valid["name"], path, "unchanged")
                return
            frozen = {f"{path}.{k}": [PC_IMMUTABLE[k]] for k in diff if k in PC_IMMUTABLE}
            if frozen:
                raise ApplyConflict(f"PriorityClass {valid['name']}: {', '.join(sorted(frozen))} cannot "
                                    "change.", frozen)
            self._staff_only()
            services.priority_class_update(priority_class=existing, description=valid["description"],
                                           global_default=valid["global_default"], actor=self.user)
        except ValidationError as exc:
            raise _mapped(django_validation_error_fields(exc), to_path) from None
        self.record("PriorityClass", "priority_classes", valid["name"], path, "updated",
                    {f"{path}.{k}": v for k, v in diff.items()})

    def _staff_only(self) -> None:
        # As kubectl apply: reading an unchanged class needs no write permission.
        if not self.user.is_staff:
            raise PermissionDenied("Only staff create or change priority classes.")

    # ------------------------------------------------------------------ queues
    def queue(self, data: dict, path: str) -> None:
        """Create, update (spec and state) or leave a Queue."""
        def to_path(key: str) -> str:
            return queue_manifest_path(path, key)

        valid = _validate(QueueWriteSerializer, data, to_path)
        existing = Queue.objects.select_related("parent").filter(name=valid["name"]).first()
        try:
            if existing is None:
                commands.queue_create(access=self.access, data=valid)
                self.record("Queue", "queues", valid["name"], path, "created")
                return
            desired = self._desired_queue(valid, existing)
            diff = diff_docs(queue_to_manifest(existing), queue_to_manifest(desired))
            if not diff:
                self.record("Queue", "queues", valid["name"], path, "unchanged")
                return
            commands.queue_update(access=self.access, queue=existing, data=valid)
        except ValidationError as exc:
            raise _mapped(django_validation_error_fields(exc), to_path) from None
        self.record("Queue", "queues", valid["name"], path, "updated",
                    {f"{path}.{k}": v for k, v in diff.items()})

    @staticmethod
    def _desired_queue(valid: dict, existing: Queue) -> Queue:
        """An unsaved Queue holding what the manifest asks for (stored units), to export."""
        fields = {k: parse_resources(valid[k], k) for k in ("capability", "deserved", "guarantee")}
        return Queue(name=valid["name"], parent=commands.resolve_queue(valid["parent"], "parent"),
                     weight=valid["weight"], priority=valid["priority"], reclaimable=valid["reclaimable"],
                     annotations=valid["annotations"], state=valid.get("state") or existing.state, **fields)

    # ------------------------------------------------------------------ node shards
    def node_shard(self, data: dict, path: str) -> None:
        """Create, update (spec and annotations) or leave a NodeShard; staff only for changes."""
        def to_path(key: str) -> str:
            return shard_manifest_path(path, key)

        valid = _validate(NodeShardWriteSerializer, data, to_path)
        existing = NodeShard.objects.filter(name=valid["name"]).first()
        diff: dict[str, Any] = {}
        if existing is not None:
            diff = diff_docs(node_shard_to_manifest(existing, status=False),
                             node_shard_to_manifest(SimpleNamespace(**valid), status=False))
            if not diff:
                self.record("NodeShard", "node_shards", valid["name"], path, "unchanged")
                return
        if not self.user.is_staff:
            raise PermissionDenied("Only staff create or change NodeShards.")
        try:
            if existing is None:
                services.node_shard_create(**valid, actor=self.user)
            else:
                services.node_shard_update(shard=existing, **valid, actor=self.user)
        except ValidationError as exc:
            raise _mapped(django_validation_error_fields(exc), to_path) from None
        if existing is None:
            self.record("NodeShard", "node_shards", valid["name"], path, "created")
        else:
            self.record("NodeShard", "node_shards", valid["name"], path, "updated",
                        {f"{path}.{k}": v for k, v in diff.items()})

    # ------------------------------------------------------------------ jobs
    def job(self, doc: JobDoc) -> None:
        """Create a job, or compare it with the stored one and update or leave it."""
        valid = _validate(JobSubmitSerializer, doc.data, doc.manifest_path)
        existing = Job.objects.select_related("queue", "priority_class").filter(
            namespace=valid["namespace"], name=valid["name"]).first()
        try:
            if existing is None:
                self._create_job(doc, valid)
                return
            self._update_job(doc, valid, existing)
        except ManifestError:
            raise  # the admission webhook's queue rules: already by manifest path
        except ValidationError as exc:
            raise _mapped(django_validation_error_fields(exc), doc.manifest_path) from None

    def _queue_name(self, doc: JobDoc, valid: dict) -> str:
        name = doc.data.get("queue") or default_queue_name()  # Volcano's mutating webhook: "default"
        if name == default_queue_name():
            ensure_default_queue()
        valid["queue"] = name
        return name

    def _create_job(self, doc: JobDoc, valid: dict) -> None:
        admit_queue(self._queue_name(doc, valid), doc.fields["queue"], _webhook_kind(doc))
        self._new_jobs.append((doc, valid))  # submitted together, after every document is read
        self.record(doc.kind, "jobs", doc.uid, doc.path, "created")

    def _submit_new_jobs(self) -> None:
        """The new jobs through the API's batch path (schedweb.api.commands.submit_jobs: one read,
        one statement for all of them and their tasks); the first refused document's error, by
        its manifest paths (nothing is written: the caller's transaction is all or nothing)."""
        if not self._new_jobs:
            return
        items = [commands.SubmitItem(valid, passthrough=doc.passthrough) for doc, valid in self._new_jobs]
        outcomes = commands.submit_jobs(access=self.access, items=items)
        for (doc, _), outcome in zip(self._new_jobs, outcomes, strict=True):
            if isinstance(outcome.error, ValidationError):
                raise _mapped(django_validation_error_fields(outcome.error), doc.manifest_path) from None
            if outcome.error is not None:
                raise outcome.error

    def _update_job(self, doc: JobDoc, valid: dict, existing: Job) -> None:
        queue_name = self._queue_name(doc, valid)
        desired_job, desired_tasks = self._desired_job(doc, valid)
        current_tasks = sorted(existing.tasks.prefetch_related("spec"), key=lambda t: t.id)
        rel = self._diff(doc, existing, current_tasks, desired_job, desired_tasks)
        if not rel:
            self.record(doc.kind, "jobs", doc.uid, doc.path, "unchanged")
            return
        diff = {self._abs(doc, p): v for p, v in rel.items()}
        # As kubectl apply: an unchanged object needs no write permission, a change does.
        if not self.access.can_cancel(existing):
            raise PermissionDenied(f"Only the submitter or an admin of queue {existing.queue.name} may "
                                   f"change job {existing.uid}.")
        if existing.phase in TERMINAL_JOB_PHASES:
            raise ApplyConflict(f"Job {doc.uid} is {existing.phase}; a finished job does not change.",
                                {p: [f"Job {doc.uid} is {existing.phase}; a finished job does not change."]
                                 for p in diff})
        started = job_started(existing)
        if started:
            frozen = [self._abs(doc, p) for p in self._immutable(doc, rel)]
            if frozen:
                message = (f"Job {doc.uid} has started (phase {existing.phase}): only minAvailable, the "
                           "tasks' minAvailable, priorityClassName and metadata may change.")
                raise ApplyConflict(message, {p: [message] for p in frozen})
        changes: dict[str, Any] = {
            "min_member": valid["min_member"], "min_task_member": valid["min_task_member"],
            "min_resources": valid["min_resources"], "priority_class": valid.get("priority_class"),
            "preemptable": valid["preemptable"], "sla_waiting_time": valid["sla_waiting_time"],
            "passthrough": doc.passthrough}
        if not started:
            if queue_name != existing.queue.name:
                admit_queue(queue_name, doc.fields["queue"], _webhook_kind(doc))
                if not self.access.can_submit(desired_job.queue.id):
                    raise PermissionDenied(f"You may not submit jobs to queue {queue_name}.")
            changes.update(queue=desired_job.queue, tasks=[dict(t) for t in valid["tasks"]],
                           scheduler_name=valid["scheduler_name"])
        services.job_update(job=existing, actor=self.user, **changes)
        self.record(doc.kind, "jobs", doc.uid, doc.path, "updated", diff)

    @staticmethod
    def _desired_job(doc: JobDoc, valid: dict) -> tuple[Job, list[Task]]:
        """Unsaved Job and Tasks holding what the manifest asks for, normalized as the services
        store it (ValidationError naming the API field otherwise)."""
        queue = commands.resolve_queue(valid["queue"]) or Queue(name=valid["queue"])
        pc = commands.resolve_priority_class(valid.get("priority_class")) or global_default_priority_class()
        job = Job(namespace=valid["namespace"], name=valid["name"], queue=queue,
                  min_member=valid["min_member"], min_task_member=valid["min_task_member"], priority_class=pc,
                  min_resources=parse_resources(valid["min_resources"], "min_resources"),
                  preemptable=valid["preemptable"], sla_waiting_time=valid["sla_waiting_time"],
                  passthrough=doc.passthrough, scheduler_name=valid["scheduler_name"])
        tasks = []
        for i, raw in enumerate(valid["tasks"]):
            checked = _check_task(dict(raw), i, {})
            tasks.append(Task(**{k: checked[k] for k in TASK_MODEL_FIELDS}))
        return job, tasks

    @staticmethod
    def _diff(doc: JobDoc, existing: Job, current_tasks: list, desired: Job, desired_tasks: list) -> dict:
        """Relative diff paths: `spec...` of the Job / PodGroup document, `pods[<name>]...` of Pods."""
        if doc.kind == "Job":
            return diff_docs(job_to_vcjob(existing, current_tasks), job_to_vcjob(desired, desired_tasks))
        before, after = job_to_podgroup(existing, current_tasks), job_to_podgroup(desired, desired_tasks)
        out = diff_docs(before[0], after[0])
        old_pods = {d["metadata"]["name"]: d for d in before[1:]}
        new_pods = {d["metadata"]["name"]: d for d in after[1:]}
        for name in list(old_pods) + [n for n in new_pods if n not in old_pods]:
            out.update(diff_docs(old_pods.get(name), new_pods.get(name), f"pods[{name}]"))
        return out

    @staticmethod
    def _immutable(doc: JobDoc, rel: dict) -> list[str]:
        own = [p for p in rel if not p.startswith("pods[")]
        return immutable_when_started(doc.kind, own) + [p for p in rel if p.startswith("pods[")]

    @staticmethod
    def _abs(doc: JobDoc, rel: str) -> str:
        """A relative diff path as a manifest path (a Pod's by its own document)."""
        if rel.startswith("pods["):
            name, _, rest = rel[5:].partition("]")
            pods = {task.get("name"): pod_path for pod_path, task in zip(doc.task_paths, doc.data["tasks"],
                                                                         strict=True)}
            return pods.get(name, f"{doc.path}.pods[{name}]") + rest
        return f"{doc.path}.{rel}"


def _webhook_kind(doc: JobDoc) -> str:
    return "job" if doc.kind == "Job" else "PodGroup"


def read_documents(text: str) -> list[dict]:
    """The manifest's YAML documents (load_documents), a DRF ValidationError (400) if unreadable."""
    try:
        return load_documents(text)
    except ManifestError as exc:
        raise serializers.ValidationError(django_validation_error_fields(exc)) from None


def apply_manifest(text: str | list[dict], *, access: QueueAccess, dry_run: bool,
                   preview: bool = True) -> dict[str, Any]:
    """Read (unless given its documents, read_documents), check and apply a manifest (the
    caller's transaction); the response body.

    A dry run with `preview` also gives each created or updated job's change a `preview`: where
    it would go in the next cycle and its estimated start (_add_previews).
    Raises DRF ValidationError (400, fields by manifest path), PermissionDenied (403) or
    ApplyConflict (409)."""
    docs = read_documents(text) if isinstance(text, str) else text
    try:
        parsed = parse_manifest(docs, dict(PriorityClass.objects.values_list("name", "value")))
    except ManifestError as exc:
        raise serializers.ValidationError(django_validation_error_fields(exc)) from None
    try:
        result = _Apply(access, dry_run).run(parsed)
    except ManifestError as exc:  # the queue rules of the admission webhook
        raise serializers.ValidationError(django_validation_error_fields(exc)) from None
    if dry_run and preview:
        _add_previews(result)
    return result


def _add_previews(result: dict[str, Any]) -> None:
    """Issue 20: each created or updated job document's change gets `preview` (placement, nodes,
    reason, estimated start: schedweb.scheduling.submit_preview), all jobs of the manifest in one
    session on the state the dry run has written (its transaction is rolled back after)."""
    from schedweb.scheduling.submit_preview import preview_stored_jobs

    changes = [c for c in result["changes"] if c["kind"] in ("Job", "PodGroup")
               and c["action"] in ("created", "updated")]
    if changes:
        previews = preview_stored_jobs([c["name"] for c in changes])
        for change in changes:
            change["preview"] = previews.get(change["name"])

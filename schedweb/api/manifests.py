"""Volcano manifests (YAML) to API write dicts: PriorityClass, Queue, PodGroup (+ its Pods),
batch Job and NodeShard (schedweb.api.manifests_shard).

Objects we model are read strictly (unknown spec keys are errors naming their path); Kubernetes
bookkeeping is dropped and the fields schedweb does not act on are kept as the job's passthrough
(schedweb.api.manifests_vcjob). The dicts returned here have the shape of the API's write
serializers, so import and the JSON endpoints share one validation and one service call path;
batch Jobs first pass Volcano's admission rules (schedweb.api.manifests_admission).

YAML is read with a budget (`BudgetLoader`): at most MAX_YAML_DEPTH levels of nesting and
MAX_YAML_NODES nodes counted with every alias expanded, so an alias bomb is refused while it is
composed, before anything walks it; at most MAX_JOBS_PER_MANIFEST jobs per manifest and
MAX_TASKS_PER_JOB replicas per batch Job and MAX_TASKS_PER_REQUEST tasks in all (Job replicas and
Pods; MAX_TASKS_PER_DRY_RUN in a dry run), checked before any pod is generated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from schedweb.api.manifests_admission import admit_vcjob
from schedweb.api.manifests_base import (  # noqa: F401 - the module's public names, re-exported
    DURATION_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    JOB_API,
    PODGROUP_API,
    PREEMPTABLE_ANNOTATION,
    PRIORITY_CLASS_APIS,
    QUEUE_API,
    SLA_ANNOTATION,
    TASK_NAMES_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    ManifestError,
    check_json_values,
    check_keys,
    fail,
    format_duration,
    load_documents,
    metadata,
    name_of,
    obj,
    parse_duration,
)
from schedweb.api.manifests_priority import priority_class_from_manifest
from schedweb.api.manifests_shard import SHARD_API, node_shard_from_manifest
from schedweb.api.manifests_vcjob import JobDoc, job_from_podgroup, job_from_vcjob

QUEUE_SPEC = {"weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "priority"}
# Queue write-data field -> manifest path under the document.
QUEUE_FIELD_PATHS = {"name": "metadata.name", "parent": "spec.parent", "weight": "spec.weight",
                     "priority": "spec.priority", "reclaimable": "spec.reclaimable",
                     "capability": "spec.capability", "deserved": "spec.deserved",
                     "guarantee": "spec.guarantee.resource", "annotations": "metadata.annotations",
                     "state": "status.state", "queue": "metadata.name"}
SUPPORTED = {("Queue", QUEUE_API), ("PodGroup", PODGROUP_API), ("Job", JOB_API), ("Pod", "v1"),
             ("NodeShard", SHARD_API)}
FOREIGN_KIND_HINT = ("expected PriorityClass (scheduling.k8s.io/v1 or v1beta1), Queue or PodGroup "
                     f"({QUEUE_API}), Job ({JOB_API}), NodeShard ({SHARD_API}) or Pod (v1)")


@dataclass
class Parsed:
    """A manifest's objects in apply order: priority classes, queues (parents first), NodeShards,
    jobs."""

    priority_classes: list[tuple[dict, str]] = field(default_factory=list)
    queues: list[tuple[dict, str]] = field(default_factory=list)
    node_shards: list[tuple[dict, str]] = field(default_factory=list)
    jobs: list[JobDoc] = field(default_factory=list)


def queue_manifest_path(path: str, api_path: str) -> str:
    """The manifest path of a queue's API error path (`weight` -> `documents[0].spec.weight`)."""
    head, _, rest = api_path.partition(".")
    base = head.split("[", 1)[0]
    if base in QUEUE_FIELD_PATHS:
        return f"{path}.{QUEUE_FIELD_PATHS[base]}{head[len(base):]}" + (f".{rest}" if rest else "")
    return path if api_path == "non_field_errors" else f"{path}.{api_path}"


def queue_from_manifest(doc: dict, path: str) -> dict:
    """A Volcano Queue as queue write data (parent "root" or absent = top level)."""
    meta = metadata(doc, path)
    spec = obj(doc.get("spec"), f"{path}.spec")
    check_keys(spec, QUEUE_SPEC, f"{path}.spec")
    guarantee = obj(spec.get("guarantee"), f"{path}.spec.guarantee")
    check_keys(guarantee, {"resource"}, f"{path}.spec.guarantee")
    status = obj(doc.get("status"), f"{path}.status")
    parent = name_of(spec.get("parent"), f"{path}.spec.parent")
    data: dict[str, Any] = {
        "name": meta["name"],
        "parent": None if parent in (None, "", "root") else parent,
        "weight": spec.get("weight", 1),
        "priority": spec.get("priority", 0),
        "reclaimable": spec.get("reclaimable", True),
        "capability": spec.get("capability"),
        "deserved": spec.get("deserved"),
        "guarantee": guarantee.get("resource"),
        "annotations": meta.get("annotations") or {},
    }
    if status.get("state"):
        data["state"] = status["state"]
    return data


def parse_manifest(docs: list[dict], priority_classes: dict[str, int]) -> Parsed:
    """Every document read (ManifestError at the first bad one). `priority_classes` (name ->
    value, the stored ones) resolves task templates' priorityClassName, with the manifest's own
    PriorityClasses added."""
    parsed = Parsed()
    groups: list[tuple[dict, str]] = []
    vcjobs: list[tuple[dict, str]] = []
    pods: dict[tuple[str, str], list[tuple[dict, str]]] = {}
    classes = dict(priority_classes)
    for i, doc in enumerate(docs):
        path, kind, api = f"documents[{i}]", doc["kind"], doc["apiVersion"]
        if (kind, api) in SUPPORTED or (kind == "PriorityClass" and api in PRIORITY_CLASS_APIS):
            check_json_values(doc, path)  # what is kept must be storable as JSON
        if (kind, api) == ("Queue", QUEUE_API):
            parsed.queues.append((queue_from_manifest(doc, path), path))
        elif kind == "PriorityClass" and api in PRIORITY_CLASS_APIS:
            data = priority_class_from_manifest(doc, path)
            classes[data["name"]] = data["value"]
            parsed.priority_classes.append((data, path))
        elif (kind, api) == ("NodeShard", SHARD_API):
            parsed.node_shards.append((node_shard_from_manifest(doc, path), path))
        elif (kind, api) == ("PodGroup", PODGROUP_API):
            groups.append((doc, path))
        elif (kind, api) == ("Job", JOB_API):
            admit_vcjob(doc, path)
            vcjobs.append((doc, path))
        elif (kind, api) == ("Pod", "v1"):
            meta = metadata(doc, path)
            group = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if not group or not isinstance(group, str):
                fail(f"{path}.metadata.annotations", f"A Pod needs the {GROUP_NAME_ANNOTATION} annotation.")
            pods.setdefault((meta.get("namespace") or "default", group), []).append((doc, path))
        else:
            fail(f"{path}.kind", f"Unsupported kind {kind!r} of {api!r}: {FOREIGN_KIND_HINT}.")
    limit = int(getattr(settings, "MAX_JOBS_PER_MANIFEST", 500))
    if len(groups) + len(vcjobs) > limit:
        fail("documents", f"The manifest has {len(groups) + len(vcjobs)} jobs (PodGroups and Jobs); at "
                          f"most {limit} (MAX_JOBS_PER_MANIFEST).")
    _check_request_tasks(vcjobs, pods)
    for doc, path in groups:
        meta = metadata(doc, path)
        key = (meta.get("namespace") or "default", meta["name"])
        parsed.jobs.append(job_from_podgroup(doc, pods.pop(key, []), path, classes))
    for doc, path in vcjobs:
        parsed.jobs.append(job_from_vcjob(doc, path, classes))
    _refuse_duplicates(parsed)
    for (namespace, group), orphans in pods.items():
        fail(f"{orphans[0][1]}.metadata.annotations",
             f"Pod of PodGroup {namespace}/{group}, which is not in the manifest.")
    parsed.queues = _parents_first(parsed.queues)
    return parsed


def _check_request_tasks(vcjobs: list[tuple[dict, str]], pods: dict) -> None:
    """The request's task bound (MAX_TASKS_PER_REQUEST, MAX_TASKS_PER_DRY_RUN in a dry run: see
    schedweb.api.limits) over every Job's replicas and every Pod, before any pod is made."""
    from schedweb.api import limits

    total = sum(len(group) for group in pods.values())
    per_job = int(getattr(settings, "MAX_TASKS_PER_JOB", 10_000))
    for doc, _ in vcjobs:
        tasks = (doc.get("spec") or {}).get("tasks") if isinstance(doc.get("spec"), dict) else None
        replicas = [t.get("replicas", 1) if isinstance(t, dict) else 0
                    for t in (tasks if isinstance(tasks, list) else [])]
        own = sum(n for n in replicas if isinstance(n, int) and not isinstance(n, bool) and n > 0)
        if own > per_job:
            return  # that job's own bound names its document (job_from_vcjob, MAX_TASKS_PER_JOB)
        total += own
    limit, setting = limits.task_limit()
    if total > limit:
        what = "a dry run" if setting == "MAX_TASKS_PER_DRY_RUN" else "one request"
        fail("documents", f"The manifest would make {total} tasks (Job replicas and Pods); {what} may "
                          f"make at most {limit} ({setting}).")


def _refuse_duplicates(parsed: Parsed) -> None:
    """Each object once per manifest (a second document of the same name would silently win)."""
    for kind, items in (("PriorityClass", [(d["name"], p) for d, p in parsed.priority_classes]),
                        ("Queue", [(d["name"], p) for d, p in parsed.queues]),
                        ("NodeShard", [(d["name"], p) for d, p in parsed.node_shards]),
                        ("job", [(j.uid, j.path) for j in parsed.jobs])):
        first: dict[str, str] = {}
        for name, path in items:
            if name in first:
                fail(f"{path}.metadata.name", f"{kind} {name} is also {first[name]}; each object once "
                                              "per manifest.")
            first[name] = path


def split_documents(docs: list[dict], priority_classes: dict[str, int]
                    ) -> tuple[list[tuple[dict, str]], list[tuple[dict, str]]]:
    """(queue data, path) with parents first, and (job submit data, path) of PodGroups and Jobs
    (the earlier interface of parse_manifest, which also gives priority classes and paths)."""
    parsed = parse_manifest(docs, priority_classes)
    return parsed.queues, [(job.data, job.path) for job in parsed.jobs]


def _parents_first(queues: list[tuple[dict, str]]) -> list[tuple[dict, str]]:
    """Order queues so a parent defined in the same file comes before its children."""
    by_name = {q["name"]: (q, p) for q, p in queues}
    done: set[str] = set()
    out: list[tuple[dict, str]] = []
    for name in by_name:
        chain: list[str] = []
        while name in by_name and name not in done and name not in chain:
            chain.append(name)
            name = by_name[name][0]["parent"]
        for n in reversed(chain):
            done.add(n)
            out.append(by_name[n])
    return out

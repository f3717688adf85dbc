"""Export of queues and jobs as Volcano manifests (the inverse of `manifests.py`)."""

from __future__ import annotations

from typing import Any

import yaml

from schedweb.api.manifests import (
    DURATION_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    JOB_API,
    PODGROUP_API,
    PREEMPTABLE_ANNOTATION,
    QUEUE_API,
    SLA_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    format_duration,
)
from schedweb.api.units import to_quantities


def queue_to_manifest(queue) -> dict:
    """A Queue model as a scheduling.volcano.sh/v1beta1 Queue (hierarchy via spec.parent)."""
    spec: dict[str, Any] = {"weight": queue.weight, "reclaimable": queue.reclaimable,
                            "parent": queue.parent.name if queue.parent_id else "root"}
    if queue.priority:
        spec["priority"] = queue.priority
    for key in ("capability", "deserved"):
        if getattr(queue, key) is not None:
            spec[key] = to_quantities(getattr(queue, key))
    if queue.guarantee is not None:
        spec["guarantee"] = {"resource": to_quantities(queue.guarantee)}
    meta: dict[str, Any] = {"name": queue.name}
    if queue.annotations:
        meta["annotations"] = dict(queue.annotations)
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": meta, "spec": spec,
            "status": {"state": queue.state}}


def _job_metadata(job) -> dict:
    annotations: dict[str, str] = {}
    if not job.preemptable:
        annotations[PREEMPTABLE_ANNOTATION] = "false"
    if job.sla_waiting_time is not None:
        annotations[SLA_ANNOTATION] = format_duration(job.sla_waiting_time)
    meta: dict[str, Any] = {"name": job.name, "namespace": job.namespace}
    if annotations:
        meta["annotations"] = annotations
    return meta


def _pod_parts(task) -> tuple[dict, dict]:
    """(metadata extras, pod spec) of one task."""
    annotations: dict[str, str] = {}
    if not task.preemptable:
        annotations[PREEMPTABLE_ANNOTATION] = "false"
    if task.duration is not None:
        annotations[DURATION_ANNOTATION] = str(int(task.duration) if float(task.duration).is_integer()
                                               else task.duration)
    meta: dict[str, Any] = {}
    if task.labels:
        meta["labels"] = dict(task.labels)
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"containers": [{"name": "main",
                                            "resources": {"requests": to_quantities(task.request or {})}}]}
    if task.node_selector:
        spec["nodeSelector"] = dict(task.node_selector)
    if task.tolerations:
        spec["tolerations"] = list(task.tolerations)
    if task.affinity:
        spec["affinity"] = task.affinity
    if task.priority is not None:
        spec["priority"] = task.priority
    if task.preemption_policy and task.preemption_policy != "PreemptLowerPriority":
        spec["preemptionPolicy"] = task.preemption_policy
    return meta, spec


def job_to_podgroup(job, tasks) -> list[dict]:
    """A job as a PodGroup followed by one Pod per task (linked by the group-name annotation)."""
    spec: dict[str, Any] = {"queue": job.queue.name, "minMember": job.min_member}
    if job.min_task_member:
        spec["minTaskMember"] = dict(job.min_task_member)
    if job.min_resources is not None:
        spec["minResources"] = to_quantities(job.min_resources)
    if job.priority_class_id:
        spec["priorityClassName"] = job.priority_class.name
    docs = [{"apiVersion": PODGROUP_API, "kind": "PodGroup", "metadata": _job_metadata(job), "spec": spec}]
    for task in tasks:
        extra, pod_spec = _pod_parts(task)
        annotations = {GROUP_NAME_ANNOTATION: job.name, **extra.get("annotations", {})}
        if task.role:
            annotations[TASK_SPEC_ANNOTATION] = task.role
        meta = {"name": task.name, "namespace": job.namespace, "annotations": annotations}
        if "labels" in extra:
            meta["labels"] = extra["labels"]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec})
    return docs


def job_to_vcjob(job, tasks) -> dict:
    """A job as a batch.volcano.sh Job: one task template per role (from its first pod), replicas."""
    roles: dict[str, list] = {}
    for task in tasks:
        roles.setdefault(task.role or "default", []).append(task)
    spec_tasks = []
    for role, members in roles.items():
        meta, pod_spec = _pod_parts(members[0])
        entry: dict[str, Any] = {"name": role, "replicas": len(members)}
        if role in (job.min_task_member or {}):
            entry["minAvailable"] = job.min_task_member[role]
        entry["template"] = {"metadata": meta, "spec": pod_spec} if meta else {"spec": pod_spec}
        spec_tasks.append(entry)
    spec: dict[str, Any] = {"minAvailable": job.min_member, "schedulerName": "volcano",
                            "queue": job.queue.name}
    if job.priority_class_id:
        spec["priorityClassName"] = job.priority_class.name
    spec["tasks"] = spec_tasks
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": _job_metadata(job), "spec": spec}


def dump_documents(docs: list[dict]) -> str:
    """Multi-document YAML, keys in the order written above."""
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)

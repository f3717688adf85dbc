"""Export of queues and jobs as Volcano manifests (the inverse of `manifests.py`).

Stored free-form values (affinity, tolerations, labels, spread constraints, annotations) are
checked before they are written: one nested deeper than scheduler_core.shapes.MAX_DEPTH (stored
before the API bounded nesting) raises ExportProblem naming the object and the path, and the
view leaves that object out instead of failing the whole export with a RecursionError.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from scheduler_core.shapes import ShapeError, check_depth
from schedweb.api.manifests import (
    DURATION_ANNOTATION,
    GROUP_NAME_ANNOTATION,
    JOB_API,
    PODGROUP_API,
    PREEMPTABLE_ANNOTATION,
    QUEUE_API,
    SLA_ANNOTATION,
    TASK_NAMES_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    format_duration,
    parse_duration,
)
from schedweb.core.models import DEFAULT_SCHEDULER_NAME
from schedweb.core.quantities import to_quantities
from schedweb.core.validation import DNS_LABEL

# Free-form JSON columns the export reads as text (`<field>_json`, see `json_columns`) and decodes
# here: Django's own decoding of a 900-level value is a RecursionError before any view code runs.
TASK_JSON_FIELDS = ("labels", "node_selector", "tolerations", "affinity", "topology_spread_constraints")
QUEUE_JSON_FIELDS = ("annotations",)


class ExportProblem(ValueError):
    """An object whose stored data cannot be exported (the message names the path)."""


def json_columns(fields: tuple[str, ...]) -> dict[str, Any]:
    """Annotations reading each JSON column as text (`<field>_json`); defer the columns themselves."""
    from django.db.models import TextField
    from django.db.models.functions import Cast

    return {f"{field}_json": Cast(field, TextField()) for field in fields}


def _checked(value: Any, path: str) -> Any:
    try:
        return check_depth(value, path)
    except ShapeError as exc:
        raise ExportProblem(str(exc)) from None


def decode_columns(obj: Any, fields: tuple[str, ...], where: str) -> None:
    """Set each field of `obj` from its `<field>_json` text (when the query read it so), refusing
    text nested deeper than shapes.MAX_DEPTH before decoding it."""
    from scheduler_core.shapes import MAX_DEPTH
    from schedweb.api.parsers import json_depth

    for field in fields:
        text = getattr(obj, f"{field}_json", None)
        if not hasattr(obj, f"{field}_json"):
            continue
        if text is None:
            setattr(obj, field, None)
            continue
        if json_depth(text.encode()) > MAX_DEPTH:
            raise ExportProblem(f"{where}.{field}: nested deeper than {MAX_DEPTH} levels")
        setattr(obj, field, _checked(json.loads(text), f"{where}.{field}"))


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
    decode_columns(queue, QUEUE_JSON_FIELDS, "metadata")
    meta: dict[str, Any] = {"name": queue.name}
    if queue.annotations:
        meta["annotations"] = dict(_checked(queue.annotations, "metadata.annotations"))
    return {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": meta, "spec": spec,
            "status": {"state": queue.state}}


def _job_metadata(job) -> dict:
    """name, namespace, the labels and annotations kept from the manifest, and the annotations
    the job's fields stand for (`volcano.sh/preemptable`, `sla-waiting-time`)."""
    kept = (job.passthrough or {}).get("metadata") or {}
    annotations: dict[str, Any] = dict(kept.get("annotations") or {})
    written = annotations.get(PREEMPTABLE_ANNOTATION)
    if written is not None and str(written).lower() != str(bool(job.preemptable)).lower():
        annotations[PREEMPTABLE_ANNOTATION] = str(bool(job.preemptable)).lower()
    elif written is None and not job.preemptable:
        annotations[PREEMPTABLE_ANNOTATION] = "false"
    if job.sla_waiting_time is None:
        annotations.pop(SLA_ANNOTATION, None)
    elif not _same_duration(annotations.get(SLA_ANNOTATION), job.sla_waiting_time):
        annotations[SLA_ANNOTATION] = format_duration(job.sla_waiting_time)
    meta: dict[str, Any] = {"name": job.name, "namespace": job.namespace}
    if kept.get("labels"):
        meta["labels"] = dict(kept["labels"])
    if annotations:
        meta["annotations"] = annotations
    return meta


def _same_duration(written: Any, seconds: float) -> bool:
    """Whether the annotation as written already says `seconds` (kept verbatim then: "1h" stays)."""
    if written is None:
        return False
    try:
        return parse_duration(written, "") == seconds
    except ValidationError:
        return False


def _pod_parts(task) -> tuple[dict, dict]:
    """(metadata extras, pod spec) of one task."""
    annotations: dict[str, str] = {}
    if not task.preemptable:
        annotations[PREEMPTABLE_ANNOTATION] = "false"
    if task.duration is not None:
        annotations[DURATION_ANNOTATION] = str(int(task.duration) if float(task.duration).is_integer()
                                               else task.duration)
    where = f"tasks[{task.name}]"
    # The values live in the task's shared TaskSpec: decoded and checked once per spec.
    holder = task.spec if getattr(task, "spec_id", None) is not None else task
    if not getattr(holder, "_export_checked", False):
        decode_columns(holder, TASK_JSON_FIELDS, where)
        for field in TASK_JSON_FIELDS:
            _checked(getattr(holder, field, None), f"{where}.{field}")
        holder._export_checked = True
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
    if getattr(task, "topology_spread_constraints", None):
        spec["topologySpreadConstraints"] = list(task.topology_spread_constraints)
    if task.priority is not None:
        spec["priority"] = task.priority
    if task.preemption_policy and task.preemption_policy != "PreemptLowerPriority":
        spec["preemptionPolicy"] = task.preemption_policy
    return meta, spec


def job_to_podgroup(job, tasks) -> list[dict]:
    """A job as a PodGroup followed by one Pod per task (linked by the group-name annotation);
    Pods imported with the job come back as written."""
    spec: dict[str, Any] = {"queue": job.queue.name, "minMember": job.min_member}
    if job.min_task_member:
        spec["minTaskMember"] = dict(job.min_task_member)
    if job.min_resources is not None:
        spec["minResources"] = to_quantities(job.min_resources)
    if job.priority_class_id:
        spec["priorityClassName"] = job.priority_class.name
    docs = [{"apiVersion": PODGROUP_API, "kind": "PodGroup", "metadata": _job_metadata(job), "spec": spec}]
    passthrough = job.passthrough or {}
    kept_pods = (passthrough.get("pods") or {}) if passthrough.get("kind") == "PodGroup" else {}
    for task in tasks:
        kept = kept_pods.get(task.name)
        if kept is not None:
            meta = {"name": task.name, "namespace": job.namespace, **(kept.get("metadata") or {})}
            docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": kept.get("spec") or {}})
            continue
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
    """A job as a batch.volcano.sh Job with the passthrough fields: the tasks it was imported
    with as written, every other task in a Volcano task per distinct (role, pod template)."""
    passthrough = job.passthrough if (job.passthrough or {}).get("kind") == "Job" else {}
    roles: dict[str, list] = {}
    for task in tasks:
        roles.setdefault(task.role or "", []).append(task)
    min_task_member = job.min_task_member or {}
    spec_tasks = []
    for kept in passthrough.get("tasks") or []:
        role = kept["name"]
        entry: dict[str, Any] = {"name": role, "replicas": len(roles.pop(role, []))}
        if role in min_task_member:
            entry["minAvailable"] = min_task_member[role]
        entry.update({k: v for k, v in kept.items() if k not in ("name", "template")})
        entry["template"] = kept.get("template") or {}
        spec_tasks.append(entry)
    rest = [task for members in roles.values() for task in members]
    spec_tasks.extend(vcjob_tasks(job.name, sorted(rest, key=lambda t: t.id), min_task_member,
                                  taken={t["name"] for t in spec_tasks}, first_index=len(spec_tasks)))
    kept_spec = passthrough.get("spec") or {}
    # Jobs imported before schedulerName was a field keep it in the passthrough; the field wins
    # once it names another scheduler than the default.
    scheduler = job.scheduler_name
    if scheduler == DEFAULT_SCHEDULER_NAME:
        scheduler = kept_spec.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    spec: dict[str, Any] = {"minAvailable": job.min_member, "schedulerName": scheduler,
                            "queue": job.queue.name}
    if job.priority_class_id:
        spec["priorityClassName"] = job.priority_class.name
    spec.update({k: v for k, v in kept_spec.items() if k != "schedulerName"})
    spec["tasks"] = spec_tasks
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": _job_metadata(job), "spec": spec}


def vcjob_tasks(job_name: str, tasks: list, min_task_member: dict[str, int], *, taken: set[str],
                first_index: int = 0) -> list[dict]:
    """Volcano tasks for `tasks`: one per distinct (role, pod template), in the order of their
    first task, with `replicas` its task count. The import names pods `<job>-<task>-<index>`
    and takes the task's name as their role: a group whose names are not so lists them in its
    template's TASK_NAMES_ANNOTATION, so the import gives every pod its name back."""
    groups: dict[tuple[str, str], tuple[dict, dict, list]] = {}
    for task in tasks:
        meta, pod_spec = _pod_parts(task)
        key = (task.role or "", json.dumps([meta, pod_spec], sort_keys=True, default=str))
        groups.setdefault(key, (meta, pod_spec, []))[2].append(task)
    out: list[dict] = []
    for (role, _), (meta, pod_spec, members) in groups.items():
        index = first_index + len(out)
        name = _volcano_task_name(job_name, role, [t.name for t in members], taken, index)
        taken.add(name)
        names = [t.name for t in members]
        if names != [f"{job_name}-{name}-{r}" for r in range(len(members))]:
            listed = {**meta.get("annotations", {}), TASK_NAMES_ANNOTATION: ",".join(names)}
            meta = {**meta, "annotations": listed}
        entry: dict[str, Any] = {"name": name, "replicas": len(members)}
        if name == role and role in min_task_member:
            entry["minAvailable"] = min_task_member[role]
        entry["template"] = {"metadata": meta, "spec": pod_spec} if meta else {"spec": pod_spec}
        out.append(entry)
    return out


def _volcano_task_name(job_name: str, role: str, names: list[str], taken: set[str], index: int) -> str:
    """The first of: the role, the `<task>` of Volcano-style pod names `<job>-<task>-<i>`, the
    first pod's name, `task<index>`, that Volcano's admission takes (a DNS label, not taken,
    pod name `<job>-<task>-<index>` within 63 characters)."""
    prefix = f"{job_name}-"
    volcano_style = names[0].removeprefix(prefix).rsplit("-", 1)[0] if names[0].startswith(prefix) else ""
    for candidate in (role, volcano_style, names[0], f"task{index}"):
        pod = f"{job_name}-{candidate}-{index}"
        if (candidate and candidate not in taken and len(candidate) <= 63 and DNS_LABEL.match(candidate)
                and len(pod) <= 63):
            return candidate
    return f"task{index}"


def dump_documents(docs: list[dict]) -> str:
    """Multi-document YAML, keys in the order written above."""
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)


def with_status(doc: dict, job) -> dict:
    """The job's PodGroup (or Job) document with `status.conditions`, the PodGroup conditions the
    scheduler last set (the job's prefetched `conditions` rows), when it has any."""
    conditions = [c.to_json() for c in job.conditions.all()]
    if conditions:
        doc["status"] = {"conditions": conditions}
    return doc

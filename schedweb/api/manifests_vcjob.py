"""Volcano batch Jobs and PodGroups (+ their Pods) as job submit data, with what the import needs
besides: the manifest path of every submit field (errors name the manifest, not the API), and the
passthrough, the fields schedweb keeps without acting on them (README "Manifests").

Passthrough of a batch Job: `metadata` (labels, annotations), `spec` (policies, plugins,
maxRetry, ttlSecondsAfterFinished, volumes, minSuccess, runningEstimate, networkTopology; its
schedulerName is the job's `scheduler_name`), and per task its other keys (policies, maxRetry,
dependsOn, topologyPolicy, partitionPolicy) with its whole pod template as written. Of a
PodGroup: its metadata, and each Pod's metadata and spec as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from schedweb.api.manifests_base import (
    DURATION_ANNOTATION,
    PREEMPTABLE_ANNOTATION,
    SLA_ANNOTATION,
    TASK_NAMES_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    bool_annotation,
    check_keys,
    fail,
    kept_metadata,
    metadata,
    name_of,
    obj,
    parse_duration,
)

PODGROUP_SPEC = {"minMember", "minTaskMember", "minResources", "queue", "priorityClassName"}
# schedulerName is the job's scheduler_name (which scheduler instance places it: sharding).
JOB_SPEC_MODELLED = {"minAvailable", "queue", "priorityClassName", "tasks", "schedulerName"}
# batch Job keys only Volcano's job controller uses: stored in the passthrough and exported back.
JOB_SPEC_PASSTHROUGH = {"policies", "plugins", "maxRetry", "ttlSecondsAfterFinished",
                        "volumes", "minSuccess", "runningEstimate", "networkTopology"}
JOB_TASK_MODELLED = {"name", "replicas", "minAvailable", "template"}
JOB_TASK_PASSTHROUGH = {"policies", "maxRetry", "dependsOn", "topologyPolicy", "partitionPolicy"}

# Submit-data task fields -> where they come from in a pod (template) document.
TASK_FIELD_PATHS = {
    "request": "spec.containers", "priority": "spec.priority", "preemption_policy": "spec.preemptionPolicy",
    "labels": "metadata.labels", "node_selector": "spec.nodeSelector", "tolerations": "spec.tolerations",
    "affinity": "spec.affinity", "topology_spread_constraints": "spec.topologySpreadConstraints",
    "preemptable": f"metadata.annotations.{PREEMPTABLE_ANNOTATION}",
    "duration": f"metadata.annotations.{DURATION_ANNOTATION}",
}


@dataclass
class JobDoc:
    """One job of a manifest: submit data, passthrough, and manifest paths for error messages."""

    data: dict[str, Any]
    path: str
    kind: str  # "Job" (batch) or "PodGroup"
    fields: dict[str, str]  # submit field -> manifest path
    task_paths: list[str] = field(default_factory=list)  # per task: its pod / template path
    task_names: list[str] = field(default_factory=list)  # per task: its manifest name path
    passthrough: dict[str, Any] = field(default_factory=dict)

    @property
    def uid(self) -> str:
        """namespace/name."""
        return f"{self.data['namespace']}/{self.data['name']}"

    def manifest_path(self, api_path: str) -> str:
        """The manifest path of an API error path (`tasks[3].node_selector` -> the pod template's
        `spec.nodeSelector`); unknown paths stay under the document."""
        head, _, rest = api_path.partition(".")
        if head.startswith("tasks[") and head.endswith("]") and head[6:-1].isdigit():
            k = int(head[6:-1])
            if k < len(self.task_paths):
                key, _, deeper = rest.partition(".")
                base = key.split("[", 1)[0]
                if base in ("name", "role"):
                    return self.task_names[k]
                if base in TASK_FIELD_PATHS:
                    return f"{self.task_paths[k]}.{TASK_FIELD_PATHS[base]}{key[len(base):]}" + (
                        f".{deeper}" if deeper and base != "request" else "")
                return f"{self.task_paths[k]}.{rest}" if rest else self.task_paths[k]
        base = head.split("[", 1)[0]
        if base in self.fields:
            target = self.fields[base] + head[len(base):]
            return f"{target}.{rest}" if rest and base != "min_resources" else target
        if api_path in ("non_field_errors", ""):
            return self.path
        return f"{self.path}.{api_path}"


def _pod_request(spec: dict, path: str) -> dict | None:
    """The pod's request: its containers' requests (limits stand in for missing requests)."""
    def requests(container_list_key: str) -> list[dict]:
        """Per container: its requests, with limits standing in for missing requests."""
        out = []
        for i, c in enumerate(spec.get(container_list_key) or []):
            res = obj(obj(c, f"{path}.{container_list_key}[{i}]").get("resources"),
                      f"{path}.{container_list_key}[{i}].resources")
            out.append({**obj(res.get("limits"), f"{path}.{container_list_key}[{i}].resources.limits"),
                        **obj(res.get("requests"), f"{path}.{container_list_key}[{i}].resources.requests")})
        return out

    if spec.get("containers") is not None and not isinstance(spec.get("containers"), list):
        fail(f"{path}.containers", "Expected a list.")
    if spec.get("initContainers") is not None and not isinstance(spec.get("initContainers"), list):
        fail(f"{path}.initContainers", "Expected a list.")
    containers, inits = requests("containers"), requests("initContainers")
    if len(containers) == 1 and not inits:
        return containers[0]  # the common case: keep the author's quantities verbatim
    from scheduler_core.model import pod_request
    from scheduler_core.resources import Resource

    try:
        total = pod_request([Resource.from_quantities(c) for c in containers],
                            [Resource.from_quantities(c) for c in inits])
    except ValueError as exc:
        fail(f"{path}.containers", str(exc))
    return total.to_quantities()


def _task_from_pod_spec(name: str, role: str, meta: dict, spec: dict, path: str,
                        priority_classes: dict[str, int], job_priority_class: str | None) -> dict:
    """One task from a pod's metadata and spec; `path` is the pod (or template) path."""
    annotations = meta.get("annotations") or {}
    meta_path, path = f"{path}.metadata", f"{path}.spec"
    task: dict[str, Any] = {
        "name": name,
        "role": role,
        "request": _pod_request(spec, path) or {},
        "labels": meta.get("labels") or {},
        "node_selector": spec.get("nodeSelector") or {},
        "tolerations": spec.get("tolerations") or [],
        "affinity": spec.get("affinity"),
    }
    if spec.get("topologySpreadConstraints") is not None:
        task["topology_spread_constraints"] = spec["topologySpreadConstraints"]
    if spec.get("priority") is not None:
        task["priority"] = spec["priority"]
    elif spec.get("priorityClassName") and spec["priorityClassName"] != job_priority_class:
        cls = name_of(spec["priorityClassName"], f"{path}.priorityClassName")
        if cls not in priority_classes:
            fail(f"{path}.priorityClassName", f"Unknown priority class {cls!r}.")
        task["priority"] = priority_classes[cls]
    if spec.get("preemptionPolicy"):
        task["preemption_policy"] = spec["preemptionPolicy"]
    _annotation_fields(task, annotations, meta_path, DURATION_ANNOTATION, "duration")
    return task


def _annotation_fields(out: dict[str, Any], annotations: dict, meta_path: str, duration_key: str,
                       duration_field: str) -> None:
    """The fields annotations stand for: `preemptable`, and the duration annotation `duration_key`
    as `duration_field` (a task's run time, a job's SLA waiting time)."""
    preemptable = bool_annotation(annotations, PREEMPTABLE_ANNOTATION, meta_path)
    if preemptable is not None:
        out["preemptable"] = preemptable
    if duration_key in annotations:
        out[duration_field] = parse_duration(annotations[duration_key],
                                             f"{meta_path}.annotations.{duration_key}")


def _job_common(meta: dict, spec: dict, path: str) -> dict:
    """Namespace, name, queue (absent: the serializer's default, the default queue) and the
    annotations a job's fields stand for."""
    annotations = meta.get("annotations") or {}
    data: dict[str, Any] = {"namespace": meta.get("namespace") or "default", "name": meta["name"]}
    queue = name_of(spec.get("queue"), f"{path}.spec.queue")
    if queue:
        data["queue"] = queue
    _annotation_fields(data, annotations, f"{path}.metadata", SLA_ANNOTATION, "sla_waiting_time")
    return data


def _common_fields(path: str) -> dict[str, str]:
    return {"namespace": f"{path}.metadata.namespace", "name": f"{path}.metadata.name",
            "queue": f"{path}.spec.queue", "priority_class": f"{path}.spec.priorityClassName",
            "preemptable": f"{path}.metadata.annotations.{PREEMPTABLE_ANNOTATION}",
            "sla_waiting_time": f"{path}.metadata.annotations.{SLA_ANNOTATION}"}


def job_from_podgroup(doc: dict, pods: list[tuple[dict, str]], path: str,
                      priority_classes: dict[str, int]) -> JobDoc:
    """A PodGroup and its Pods (annotated with the group name) as job submit data."""
    meta = metadata(doc, path)
    spec = obj(doc.get("spec"), f"{path}.spec")
    check_keys(spec, PODGROUP_SPEC, f"{path}.spec")
    if not pods:
        # Volcano creates the pods of a bare PodGroup elsewhere; schedweb's jobs are their tasks.
        fail(path, f"PodGroup {meta['name']} has no Pods in this manifest: schedweb schedules a PodGroup's "
                   f"Pods, so give them here (kind Pod, annotated scheduling.k8s.io/group-name: "
                   f"{meta['name']}), or submit a batch Job (batch.volcano.sh/v1alpha1).")
    data = _job_common(meta, spec, path)
    data.update({
        "min_member": spec.get("minMember", 1),
        "min_task_member": spec.get("minTaskMember") or {},
        "min_resources": spec.get("minResources"),
        "priority_class": name_of(spec.get("priorityClassName"), f"{path}.spec.priorityClassName") or None,
    })
    tasks, task_paths, task_names = [], [], []
    kept_pods: dict[str, Any] = {}
    for pod, pod_path in pods:
        pmeta = metadata(pod, pod_path)
        role = str((pmeta.get("annotations") or {}).get(TASK_SPEC_ANNOTATION, ""))
        pod_spec = obj(pod.get("spec"), f"{pod_path}.spec")
        tasks.append(_task_from_pod_spec(pmeta["name"], role, pmeta, pod_spec, pod_path, priority_classes,
                                         data["priority_class"]))
        task_paths.append(pod_path)
        task_names.append(f"{pod_path}.metadata.name")
        kept_pods[pmeta["name"]] = {"metadata": kept_metadata(pmeta), "spec": pod_spec}
    data["tasks"] = tasks
    fields = {**_common_fields(path), "min_member": f"{path}.spec.minMember",
              "min_task_member": f"{path}.spec.minTaskMember", "min_resources": f"{path}.spec.minResources",
              "tasks": path}
    passthrough = {"kind": "PodGroup", "metadata": kept_metadata(meta), "pods": kept_pods}
    return JobDoc(data, path, "PodGroup", fields, task_paths, task_names, passthrough)


def pod_names(job: str, task: str, replicas: int, template_meta: dict, meta_path: str) -> list[str]:
    """The pods of one batch Job task: Volcano's `<job>-<task>-<index>`, or the names its
    template's TASK_NAMES_ANNOTATION lists (the export writes it for tasks named otherwise)."""
    listed = (template_meta.get("annotations") or {}).get(TASK_NAMES_ANNOTATION)
    if listed is None:
        return [f"{job}-{task}-{r}" for r in range(replicas)]
    where = f"{meta_path}.annotations.{TASK_NAMES_ANNOTATION}"
    names = str(listed).split(",")
    if len(names) != replicas or len(set(names)) != replicas:
        fail(where, f"Expected {replicas} distinct comma-separated pod names (one per replica).")
    return [name_of(n, where) for n in names]


def job_from_vcjob(doc: dict, path: str, priority_classes: dict[str, int]) -> JobDoc:
    """A Volcano batch Job as job submit data: pods `<job>-<task>-<i>`, role = task name.

    Volcano's mutating webhook defaults apply: no queue = the default queue, minAvailable absent
    or 0 = the tasks' minAvailable (else replicas) summed, an unnamed task is `default<index>`."""
    meta = metadata(doc, path)
    spec = obj(doc.get("spec"), f"{path}.spec")
    check_keys(spec, JOB_SPEC_MODELLED | JOB_SPEC_PASSTHROUGH, f"{path}.spec")
    data = _job_common(meta, spec, path)
    tasks: list[dict] = []
    task_paths: list[str] = []
    task_names: list[str] = []
    min_task_member: dict[str, int] = {}
    specs = spec.get("tasks") or []
    if not isinstance(specs, list) or not specs:
        fail(f"{path}.spec.tasks", "A batch Job needs at least one task.")
    total, default_min, max_tasks = 0, 0, int(getattr(settings, "MAX_TASKS_PER_JOB", 10_000))
    priority_class = name_of(spec.get("priorityClassName"), f"{path}.spec.priorityClassName") or None
    kept_tasks: list[dict[str, Any]] = []
    for i, t in enumerate(specs):
        tpath = f"{path}.spec.tasks[{i}]"
        t = obj(t, tpath)
        check_keys(t, JOB_TASK_MODELLED | JOB_TASK_PASSTHROUGH, tpath)
        role = name_of(t.get("name"), f"{tpath}.name") or f"default{i}"
        replicas = t.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            fail(f"{tpath}.replicas", "Must be a non-negative integer.")
        total += replicas
        if total > max_tasks:  # before generating any pod: replicas: 1000000000 is one line
            fail(f"{tpath}.replicas", f"The job would have {total} tasks; at most {max_tasks} "
                                      "(MAX_TASKS_PER_JOB).")
        task_min = t.get("minAvailable")
        if task_min is not None:
            if not isinstance(task_min, int) or isinstance(task_min, bool):
                fail(f"{tpath}.minAvailable", "Must be an integer.")
            min_task_member[role] = task_min
        default_min += replicas if task_min is None else task_min
        template = obj(t.get("template"), f"{tpath}.template")
        tmeta = obj(template.get("metadata"), f"{tpath}.template.metadata")
        tspec = obj(template.get("spec"), f"{tpath}.template.spec")
        names = pod_names(meta["name"], role, replicas, tmeta, f"{tpath}.template.metadata")
        for r in range(replicas):
            tasks.append(_task_from_pod_spec(names[r], role, tmeta, tspec,
                                             f"{tpath}.template", priority_classes, priority_class))
            task_paths.append(f"{tpath}.template")
            task_names.append(f"{tpath}.name")
        kept = {k: v for k, v in t.items() if k in JOB_TASK_PASSTHROUGH}
        kept_tasks.append({"name": role, **kept, "template": template})
    if total == 0:
        fail(f"{path}.spec.tasks", "Every task has replicas: 0; a job needs at least one pod.")
    min_member = spec.get("minAvailable") or default_min
    data["scheduler_name"] = name_of(spec.get("schedulerName"), f"{path}.spec.schedulerName") or "volcano"
    data.update({
        "min_member": min_member,
        "min_task_member": min_task_member,
        "min_resources": _vcjob_min_resources(tasks, min_member,
                                              priority_classes.get(priority_class or "", 0)),
        "priority_class": priority_class,
        "tasks": tasks,
    })
    fields = {**_common_fields(path), "min_member": f"{path}.spec.minAvailable",
              "min_task_member": f"{path}.spec.tasks", "min_resources": f"{path}.spec.tasks",
              "tasks": f"{path}.spec.tasks", "scheduler_name": f"{path}.spec.schedulerName"}
    passthrough = {"kind": "Job", "metadata": kept_metadata(meta),
                   "spec": {k: v for k, v in spec.items() if k in JOB_SPEC_PASSTHROUGH}, "tasks": kept_tasks}
    return JobDoc(data, path, "Job", fields, task_paths, task_names, passthrough)


def _vcjob_min_resources(tasks: list[dict], min_member: Any, default_priority: int) -> dict | None:
    """What Volcano's job controller puts in the PodGroup's minResources: the requests of the
    first `minAvailable` pods, higher-priority task templates first (declared order on ties)."""
    from scheduler_core.resources import QuantityError, Resource

    if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member <= 0:
        return None
    ordered = sorted(tasks, key=lambda t: -t.get("priority", default_priority)
                     if isinstance(t.get("priority", default_priority), int) else 0)
    total = Resource.empty()
    try:
        for task in ordered[:min_member]:
            total.add(Resource.from_quantities(task["request"]))
    except (QuantityError, ValueError, TypeError, AttributeError):
        return None  # the bad quantity is reported with its task path by the job validation
    return total.to_quantities()

"""Volcano manifests (YAML) to API write dicts: Queue, PodGroup (+ its Pods) and batch Job.

Objects we model are read strictly (unknown spec keys are errors naming their path); Kubernetes
bookkeeping and pod-template keys that do not affect scheduling (image, command, volumes, ...)
are ignored. The dicts returned here have the shape of the API's write serializers, so import
and the JSON endpoints share one validation and one service call path.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from django.core.exceptions import ValidationError

QUEUE_API = "scheduling.volcano.sh/v1beta1"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
JOB_API = "batch.volcano.sh/v1alpha1"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
SLA_ANNOTATION = "sla-waiting-time"
DURATION_ANNOTATION = "schedweb.io/duration-seconds"

_METADATA_KEYS = {"name", "namespace", "annotations", "labels", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "managedFields", "ownerReferences", "finalizers", "selfLink"}
_QUEUE_SPEC = {"weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "priority"}
_PODGROUP_SPEC = {"minMember", "minTaskMember", "minResources", "queue", "priorityClassName"}
# batch Job keys that only the Volcano job controller uses: accepted and ignored.
_JOB_SPEC_IGNORED = {"schedulerName", "policies", "plugins", "maxRetry", "ttlSecondsAfterFinished",
                     "volumes", "runningEstimate", "networkTopology"}
_JOB_SPEC = {"minAvailable", "queue", "priorityClassName", "tasks"} | _JOB_SPEC_IGNORED
_JOB_TASK_IGNORED = {"policies", "maxRetry", "dependsOn", "topologyPolicy"}
_JOB_TASK = {"name", "replicas", "minAvailable", "template"} | _JOB_TASK_IGNORED
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")


class ManifestError(ValidationError):
    """A bad document; `fields` keys are paths like `documents[2].spec.weight`."""


def _fail(path: str, message: str) -> None:
    raise ManifestError({path: [message]})


def _obj(value: Any, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(path, "Expected a mapping.")
    return value


def _name(value: Any, path: str) -> str | None:
    """An optional name: a string or absent (it keys dict lookups, so nothing else passes)."""
    if value is not None and not isinstance(value, str):
        _fail(path, "Expected a string.")
    return value


def _check_keys(value: dict, allowed: set[str], path: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ManifestError({f"{path}.{key}": ["Unknown or unsupported field."] for key in unknown})


def parse_duration(text: Any, path: str) -> float:
    """A Go duration ("1h30m", "90s") or a number of seconds, as seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    s = str(text).strip()
    try:
        return float(s)  # a bare number of seconds, as in our own duration annotation
    except ValueError:
        pass
    if s and _GO_DURATION.sub("", s) == "":
        scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
        return sum(float(n) * scale[u] for n, u in _GO_DURATION.findall(s))
    _fail(path, f"Bad duration {text!r}: expected a Go duration such as '1h30m' or '90s'.")
    return 0.0  # unreachable


def format_duration(seconds: float) -> str:
    """Seconds as a Go duration string ("1h30m0s" style, or "90s")."""
    if not float(seconds).is_integer():
        return f"{seconds}s"
    total = int(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{s}s"


def _bool_annotation(annotations: dict, key: str, path: str) -> bool | None:
    if key not in annotations:
        return None
    value = str(annotations[key]).lower()
    if value not in ("true", "false"):
        _fail(f"{path}.annotations.{key}", "Expected 'true' or 'false'.")
    return value == "true"


def load_documents(text: str) -> list[dict]:
    """The non-empty YAML documents of `text`; each must be a mapping with apiVersion and kind."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ManifestError({"yaml": [f"Not valid YAML{where}: {getattr(exc, 'problem', exc)}"]}) from exc
    if not docs:
        _fail("yaml", "No documents found.")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            _fail(f"documents[{i}]", "Expected a mapping with apiVersion and kind.")
        for key in ("apiVersion", "kind"):
            if not doc.get(key):
                _fail(f"documents[{i}].{key}", "This field is required.")
    return docs


def _metadata(doc: dict, path: str) -> dict:
    meta = _obj(doc.get("metadata"), f"{path}.metadata")
    _check_keys(meta, _METADATA_KEYS, f"{path}.metadata")
    if not meta.get("name"):
        _fail(f"{path}.metadata.name", "This field is required.")
    # Names key dicts below (queues by name, pods by group): anything but a string is refused here.
    for key in ("name", "namespace"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            _fail(f"{path}.metadata.{key}", "Expected a string.")
    for key in ("annotations", "labels"):
        _obj(meta.get(key), f"{path}.metadata.{key}")
    return meta


def queue_from_manifest(doc: dict, path: str) -> dict:
    """A Volcano Queue as queue write data (parent "root" or absent = top level)."""
    meta = _metadata(doc, path)
    spec = _obj(doc.get("spec"), f"{path}.spec")
    _check_keys(spec, _QUEUE_SPEC, f"{path}.spec")
    guarantee = _obj(spec.get("guarantee"), f"{path}.spec.guarantee")
    _check_keys(guarantee, {"resource"}, f"{path}.spec.guarantee")
    status = _obj(doc.get("status"), f"{path}.status")
    parent = _name(spec.get("parent"), f"{path}.spec.parent")
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


def _pod_request(spec: dict, path: str) -> dict | None:
    """The pod's request: its containers' requests (limits stand in for missing requests)."""
    def requests(container_list_key: str) -> list[dict]:
        """Per container: its requests, with limits standing in for missing requests."""
        out = []
        for i, c in enumerate(spec.get(container_list_key) or []):
            res = _obj(_obj(c, f"{path}.{container_list_key}[{i}]").get("resources"),
                       f"{path}.{container_list_key}[{i}].resources")
            out.append({**_obj(res.get("limits"), f"{path}.{container_list_key}[{i}].resources.limits"),
                        **_obj(res.get("requests"), f"{path}.{container_list_key}[{i}].resources.requests")})
        return out

    containers, inits = requests("containers"), requests("initContainers")
    if len(containers) == 1 and not inits:
        return containers[0]  # the common case: keep the author's quantities verbatim
    from scheduler_core.model import pod_request
    from scheduler_core.resources import Resource

    try:
        total = pod_request([Resource.from_quantities(c) for c in containers],
                            [Resource.from_quantities(c) for c in inits])
    except ValueError as exc:
        _fail(f"{path}.containers", str(exc))
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
    if spec.get("priority") is not None:
        task["priority"] = spec["priority"]
    elif spec.get("priorityClassName") and spec["priorityClassName"] != job_priority_class:
        cls = _name(spec["priorityClassName"], f"{path}.priorityClassName")
        if cls not in priority_classes:
            _fail(f"{path}.priorityClassName", f"Unknown priority class {cls!r}.")
        task["priority"] = priority_classes[cls]
    if spec.get("preemptionPolicy"):
        task["preemption_policy"] = spec["preemptionPolicy"]
    preemptable = _bool_annotation(annotations, PREEMPTABLE_ANNOTATION, meta_path)
    if preemptable is not None:
        task["preemptable"] = preemptable
    if DURATION_ANNOTATION in annotations:
        task["duration"] = parse_duration(annotations[DURATION_ANNOTATION],
                                          f"{meta_path}.annotations.{DURATION_ANNOTATION}")
    return task


def _job_common(meta: dict, path: str) -> dict:
    annotations = meta.get("annotations") or {}
    data: dict[str, Any] = {"namespace": meta.get("namespace") or "default", "name": meta["name"]}
    preemptable = _bool_annotation(annotations, PREEMPTABLE_ANNOTATION, f"{path}.metadata")
    if preemptable is not None:
        data["preemptable"] = preemptable
    if SLA_ANNOTATION in annotations:
        data["sla_waiting_time"] = parse_duration(annotations[SLA_ANNOTATION],
                                                  f"{path}.metadata.annotations.{SLA_ANNOTATION}")
    return data


def job_from_podgroup(doc: dict, pods: list[tuple[dict, str]], path: str,
                      priority_classes: dict[str, int]) -> dict:
    """A PodGroup and its Pods (annotated with the group name) as job submit data."""
    meta = _metadata(doc, path)
    spec = _obj(doc.get("spec"), f"{path}.spec")
    _check_keys(spec, _PODGROUP_SPEC, f"{path}.spec")
    data = _job_common(meta, path)
    data.update({
        "queue": spec.get("queue") or "default",
        "min_member": spec.get("minMember", 1),
        "min_task_member": spec.get("minTaskMember") or {},
        "min_resources": spec.get("minResources"),
        "priority_class": spec.get("priorityClassName") or None,
    })
    tasks = []
    for pod, pod_path in pods:
        pmeta = _metadata(pod, pod_path)
        role = str((pmeta.get("annotations") or {}).get(TASK_SPEC_ANNOTATION, ""))
        pod_spec = _obj(pod.get("spec"), f"{pod_path}.spec")
        tasks.append(_task_from_pod_spec(pmeta["name"], role, pmeta, pod_spec, pod_path, priority_classes,
                                         data["priority_class"]))
    data["tasks"] = tasks
    return data


def job_from_vcjob(doc: dict, path: str, priority_classes: dict[str, int]) -> dict:
    """A Volcano batch Job as job submit data: pods `<job>-<task>-<i>`, role = task name."""
    meta = _metadata(doc, path)
    spec = _obj(doc.get("spec"), f"{path}.spec")
    _check_keys(spec, _JOB_SPEC, f"{path}.spec")
    data = _job_common(meta, path)
    tasks: list[dict] = []
    min_task_member: dict[str, int] = {}
    specs = spec.get("tasks") or []
    if not isinstance(specs, list) or not specs:
        _fail(f"{path}.spec.tasks", "A batch Job needs at least one task.")
    total = 0
    priority_class = _name(spec.get("priorityClassName"), f"{path}.spec.priorityClassName") or None
    for i, t in enumerate(specs):
        tpath = f"{path}.spec.tasks[{i}]"
        t = _obj(t, tpath)
        _check_keys(t, _JOB_TASK, tpath)
        role = _name(t.get("name"), f"{tpath}.name")
        if not role:
            _fail(f"{tpath}.name", "This field is required.")
        replicas = t.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            _fail(f"{tpath}.replicas", "Must be a non-negative integer.")
        total += replicas
        if t.get("minAvailable") is not None:
            min_task_member[role] = t["minAvailable"]
        template = _obj(t.get("template"), f"{tpath}.template")
        tmeta = _obj(template.get("metadata"), f"{tpath}.template.metadata")
        tspec = _obj(template.get("spec"), f"{tpath}.template.spec")
        for r in range(replicas):
            tasks.append(_task_from_pod_spec(f"{meta['name']}-{role}-{r}", role, tmeta, tspec,
                                             f"{tpath}.template", priority_classes, priority_class))
    min_member = spec.get("minAvailable", total)
    data.update({
        "queue": spec.get("queue") or "default",
        "min_member": min_member,
        "min_task_member": min_task_member,
        "min_resources": _vcjob_min_resources(tasks, min_member,
                                              priority_classes.get(priority_class or "", 0)),
        "priority_class": priority_class,
        "tasks": tasks,
    })
    return data


def _vcjob_min_resources(tasks: list[dict], min_member: Any, default_priority: int) -> dict | None:
    """What Volcano's job controller puts in the PodGroup's minResources: the requests of the
    first `minAvailable` pods, higher-priority task templates first (declared order on ties)."""
    from scheduler_core.resources import QuantityError, Resource

    if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member <= 0:
        return None
    ordered = sorted(tasks, key=lambda t: -t.get("priority", default_priority))
    total = Resource.empty()
    try:
        for task in ordered[:min_member]:
            total.add(Resource.from_quantities(task["request"]))
    except (QuantityError, ValueError):
        return None  # the bad quantity is reported with its task path by the job validation
    return total.to_quantities()


def split_documents(docs: list[dict], priority_classes: dict[str, int]
                    ) -> tuple[list[tuple[dict, str]], list[tuple[dict, str]]]:
    """(queue data, path) with parents first, and (job submit data, path) of PodGroups and Jobs."""
    queues: list[tuple[dict, str]] = []
    groups: list[tuple[dict, str]] = []
    vcjobs: list[tuple[dict, str]] = []
    pods: dict[tuple[str, str], list[tuple[dict, str]]] = {}
    for i, doc in enumerate(docs):
        path, kind, api = f"documents[{i}]", doc["kind"], doc["apiVersion"]
        if (kind, api) == ("Queue", QUEUE_API):
            queues.append((queue_from_manifest(doc, path), path))
        elif (kind, api) == ("PodGroup", PODGROUP_API):
            groups.append((doc, path))
        elif (kind, api) == ("Job", JOB_API):
            vcjobs.append((doc, path))
        elif (kind, api) == ("Pod", "v1"):
            meta = _metadata(doc, path)
            group = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if not group or not isinstance(group, str):
                _fail(f"{path}.metadata.annotations", f"A Pod needs the {GROUP_NAME_ANNOTATION} annotation.")
            pods.setdefault((meta.get("namespace") or "default", group), []).append((doc, path))
        else:
            _fail(f"{path}.kind", f"Unsupported kind {kind!r} of {api!r}: expected Queue or PodGroup "
                                  f"({QUEUE_API}), Job ({JOB_API}) or Pod (v1).")
    jobs: list[tuple[dict, str]] = []
    for doc, path in groups:
        meta = _metadata(doc, path)
        key = (meta.get("namespace") or "default", meta["name"])
        jobs.append((job_from_podgroup(doc, pods.pop(key, []), path, priority_classes), path))
    for doc, path in vcjobs:
        jobs.append((job_from_vcjob(doc, path, priority_classes), path))
    for (namespace, group), orphans in pods.items():
        _fail(f"{orphans[0][1]}.metadata.annotations",
              f"Pod of PodGroup {namespace}/{group}, which is not in the manifest.")
    return _parents_first(queues), jobs


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

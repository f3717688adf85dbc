"""Volcano's admission webhook for batch Jobs (pkg/webhooks/admission/jobs/validate, v1.11), on
the manifest as written: every rule it enforces at create, each refusal naming the rule and the
manifest path (`documents[0].spec.tasks[1].name`), all of a document's refusals at once.

The queue rules need the database and run when the job is applied (`admit_queue`); the others
run on the document alone (`admit_vcjob`). Where the webhook defers to Kubernetes' pod template
validation, the checks kept are those a scheduler depends on (containers present and named,
unique container names, restartPolicy, requests within limits); the image, ports and the rest
of the container are not checked, since schedweb runs no containers.
"""

from __future__ import annotations

import re
from typing import Any

from schedweb.api.manifests_base import ManifestError

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# policyEventMap / policyActionMap of the webhook: the events and actions a user may write.
POLICY_EVENTS = ("*", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
POLICY_ACTIONS = ("AbortJob", "RestartJob", "RestartTask", "RestartPod", "TerminateJob", "CompleteJob",
                  "ResumeJob")
# Job plugins Volcano's job controller registers.
JOB_PLUGINS = ("env", "ssh", "svc", "tensorflow", "mpi", "pytorch", "ray")
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
RULE_PREFIX = "Volcano admission rule"


def denial(rule: str, message: str) -> str:
    """A refusal message naming the rule: `Volcano admission rule <rule>: <message>`."""
    return f"{RULE_PREFIX} {rule}: {message}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dns_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not DNS1123_LABEL.match(value):
        errors.append("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                      "and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')")
    return errors


class _Errors:
    """Refusals by manifest path (the first per path is kept: one message says enough)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fields: dict[str, list[str]] = {}

    def add(self, rel: str, rule: str, message: str) -> None:
        """Record `rule`'s refusal at `<document path>.<rel>`."""
        self.fields.setdefault(f"{self.path}.{rel}" if rel else self.path, []).append(denial(rule, message))


def admit_vcjob(doc: dict, path: str) -> None:
    """Raise a ManifestError listing every create-time rule of Volcano's job webhook `doc` breaks.

    Values of the wrong type are left to the reader (which names them); rules here skip them."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    job_name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    err = _Errors(path)
    min_available = _int(spec.get("minAvailable"))
    if min_available is not None and min_available < 0:
        err.add("spec.minAvailable", "job-min-available", "job 'minAvailable' must be >= 0.")
    if (_int(spec.get("maxRetry")) or 0) < 0:
        err.add("spec.maxRetry", "job-max-retry", "'maxRetry' cannot be less than zero.")
    if (_int(spec.get("ttlSecondsAfterFinished")) or 0) < 0:
        err.add("spec.ttlSecondsAfterFinished", "job-ttl",
                "'ttlSecondsAfterFinished' cannot be less than zero.")
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        err.add("spec.tasks", "job-tasks", "No task specified in job spec")
        tasks = []
    total, names = 0, {}
    for i, task in enumerate(tasks):
        if isinstance(task, dict):
            total += _admit_task(err, task, i, job_name, names)
    if min_available is not None and min_available > 0 and total < min_available:
        err.add("spec.minAvailable", "job-min-available-replicas",
                "job 'minAvailable' should not be greater than total replicas in tasks")
    _admit_policies(err, spec.get("policies"), "spec.policies")
    plugins = spec.get("plugins")
    if isinstance(plugins, dict):
        for plugin in plugins:
            if plugin not in JOB_PLUGINS:
                err.add(f"spec.plugins.{plugin}", "job-plugin", f"unable to find job plugin: {plugin}")
    _admit_volumes(err, spec.get("volumes"))
    _admit_dependencies(err, tasks)
    if err.fields:
        raise ManifestError(err.fields)


def _admit_task(err: _Errors, task: dict, i: int, job_name: str, names: dict[str, int]) -> int:
    """The task rules; returns its replicas (0 when not a number)."""
    where = f"spec.tasks[{i}]"
    name = task.get("name") if isinstance(task.get("name"), str) else None
    name = name or f"default{i}"  # Volcano's mutating webhook names an unnamed task default<index>
    replicas = _int(task.get("replicas", 1))
    if replicas is not None and replicas < 0:
        err.add(f"{where}.replicas", "task-replicas", f"'replicas' < 0 in task: {name};")
    task_min = _int(task.get("minAvailable"))
    if task_min is not None and task_min < 0:
        err.add(f"{where}.minAvailable", "task-min-available", f"'minAvailable' < 0 in task: {name};")
    elif task_min is not None and replicas is not None and task_min > replicas:
        err.add(f"{where}.minAvailable", "task-min-available",
                f"'minAvailable' is greater than 'replicas' in task: {name}, job: {job_name};")
    for message in _dns_label_errors(name):
        err.add(f"{where}.name", "task-name", message)
    if name in names:
        err.add(f"{where}.name", "duplicate-task-name", f"duplicated task name {name}")
    names.setdefault(name, i)
    _admit_policies(err, task.get("policies"), f"{where}.policies")
    pod_name = f"{job_name}-{name}-{i}"  # Volcano's MakePodName(job, task, index) of the webhook
    if len(pod_name) > 63 or not QUALIFIED_NAME.match(pod_name):
        err.add(f"{where}.name", "pod-name", f"create pod with name {pod_name} validate failed: a pod name "
                                             "must be a qualified name of at most 63 characters")
    template = task.get("template") if isinstance(task.get("template"), dict) else {}
    pod_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    _admit_template(err, pod_spec, f"{where}.template.spec")
    _admit_topology_policy(err, task.get("topologyPolicy"), pod_spec, where, i)
    return max(replicas or 0, 0)


def _events_of(policy: dict) -> list[Any]:
    events = list(policy["events"]) if isinstance(policy.get("events"), list) else []
    return ([policy["event"]] if policy.get("event") else []) + events


def _admit_policies(err: _Errors, policies: Any, where: str) -> None:
    """validatePolicies: the first bad policy of the list is reported, as Volcano stops there."""
    if not isinstance(policies, list):
        return
    seen_events: set[Any] = set()
    seen_codes: set[int] = set()
    for i, policy in enumerate(policies):
        if not isinstance(policy, dict):
            continue
        at, events, code = f"{where}[{i}]", _events_of(policy), policy.get("exitCode")
        if events and code is not None:
            err.add(at, "policy-event-and-exit-code", "must not specify event and exitCode simultaneously")
            return
        if not events and code is None:
            err.add(at, "policy-event-or-exit-code", "either event and exitCode should be specified")
            return
        for event in events:
            if event not in POLICY_EVENTS:
                err.add(f"{at}.event", "policy-event", f"invalid policy event {event!r}; valid events are "
                                                       f"{', '.join(POLICY_EVENTS)}")
                return
            if policy.get("action") not in POLICY_ACTIONS:
                err.add(f"{at}.action", "policy-action", f"invalid policy action {policy.get('action')!r}; "
                                                         f"valid actions are {', '.join(POLICY_ACTIONS)}")
                return
            if event in seen_events:
                err.add(f"{at}.event", "duplicate-policy-event",
                        f"duplicate event {event} across different policy")
                return
            seen_events.add(event)
        if not events:
            if not isinstance(code, int) or isinstance(code, bool):
                err.add(f"{at}.exitCode", "policy-exit-code", f"exitCode must be an integer, not {code!r}")
                return
            if code == 0:
                err.add(f"{at}.exitCode", "policy-exit-code", "0 is not a valid error code")
                return
            if code in seen_codes:
                err.add(f"{at}.exitCode", "duplicate-policy-exit-code", f"duplicate exitCode {code}")
                return
            seen_codes.add(code)
    if "*" in seen_events and len(seen_events) > 1:
        err.add(where, "policy-any-event", "if there's * here, no other policy should be here")


def _admit_volumes(err: _Errors, volumes: Any) -> None:
    """validateIO: mount paths present and unique; a claim or a claim name, not both."""
    if not isinstance(volumes, list):
        return
    mounts: set[str] = set()
    for i, volume in enumerate(volumes):
        if not isinstance(volume, dict):
            continue
        at, mount = f"spec.volumes[{i}]", volume.get("mountPath")
        claim, claim_name = volume.get("volumeClaim"), volume.get("volumeClaimName") or ""
        if not mount or not isinstance(mount, str):
            err.add(f"{at}.mountPath", "volume-mount-path", "mountPath is required;")
        elif mount in mounts:
            err.add(f"{at}.mountPath", "volume-mount-path", f"duplicated mountPath: {mount};")
        elif claim is None and not claim_name:
            err.add(at, "volume-claim", "either VolumeClaim or VolumeClaimName must be specified;")
        elif claim_name and claim is not None:
            err.add(at, "volume-claim", "conflict: If you want to use an existing PVC, just specify "
                                        "VolumeClaimName. If you want to create a new PVC, you do not need "
                                        "to specify VolumeClaimName")
        elif claim_name and (not isinstance(claim_name, str) or len(claim_name) > 253
                             or not DNS1123_SUBDOMAIN.match(claim_name)):
            err.add(f"{at}.volumeClaimName", "volume-claim", f"invalid VolumeClaimName {claim_name}: a "
                                                             "lowercase RFC 1123 subdomain")
        else:
            mounts.add(mount)
            continue
        return  # validateIO stops at its first refusal


def _admit_dependencies(err: _Errors, tasks: list) -> None:
    """Tasks with dependsOn must form a DAG (a dependency on an unknown task never resolves)."""
    graph: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    has_deps = False
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            continue
        name = task.get("name") if isinstance(task.get("name"), str) and task.get("name") else f"default{i}"
        indegree.setdefault(name, 0)
        depends = task.get("dependsOn")
        deps = depends.get("name") if isinstance(depends, dict) else None
        if isinstance(deps, list):
            has_deps = True
            for dep in deps:
                graph.setdefault(str(dep), []).append(name)
                indegree[name] += 1
    if not has_deps:
        return
    ready = [n for n, d in indegree.items() if d == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for nxt in graph.get(node, []):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    if done != len(indegree):
        err.add("spec.tasks", "task-dependencies", "job has dependencies between tasks, but doesn't form a "
                                                   "directed acyclic graph(DAG)")


def _containers(pod_spec: dict, key: str) -> list[dict]:
    value = pod_spec.get(key)
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _admit_template(err: _Errors, pod_spec: dict, where: str) -> None:
    """The part of Kubernetes' pod template validation a scheduler relies on."""
    containers = _containers(pod_spec, "containers")
    if not containers:
        err.add(f"{where}.containers", "task-template", "spec.containers: Required value")
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(_containers(pod_spec, key)):
            at, name = f"{where}.{key}[{i}]", container.get("name")
            if not isinstance(name, str) or not name:
                err.add(f"{at}.name", "task-template", f"{key}[{i}].name: Required value")
                continue
            for message in _dns_label_errors(name):
                err.add(f"{at}.name", "task-template", f"{key}[{i}].name: Invalid value: {name!r}: {message}")
            if name in seen:
                err.add(f"{at}.name", "task-template", f"{key}[{i}].name: Duplicate value: {name!r}")
            seen.add(name)
            _admit_requests_within_limits(err, container, f"{at}.resources", f"{key}[{i}]")
    policy = pod_spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        err.add(f"{where}.restartPolicy", "task-template", f"restartPolicy: Unsupported value: {policy!r}: "
                                                           f"supported values: {', '.join(RESTART_POLICIES)}")


def _admit_requests_within_limits(err: _Errors, container: dict, at: str, label: str) -> None:
    from scheduler_core.resources import QuantityError, parse_quantity

    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return
    for resource, limit in limits.items():
        if resource not in requests:
            continue
        try:
            over = parse_quantity(requests[resource]) > parse_quantity(limit)
        except (QuantityError, ValueError, TypeError):
            continue  # the reader names a bad quantity
        if over:
            err.add(f"{at}.requests.{resource}", "task-template",
                    f"{label}.resources.requests: Invalid value: {requests[resource]!r}: must be less than "
                    f"or equal to {resource} limit of {limit}")


def _admit_topology_policy(err: _Errors, policy: Any, pod_spec: dict, where: str, index: int) -> None:
    """validateTaskTopoPolicy: a NUMA policy needs a Guaranteed pod (requests, or limits when there
    are none, equal to cpu and memory limits) with whole CPUs in every container."""
    if policy is None or policy == "none":
        return
    if policy not in TOPOLOGY_POLICIES:
        err.add(f"{where}.topologyPolicy", "task-topology-policy",
                f"Unsupported value: {policy!r}: supported values: {', '.join(TOPOLOGY_POLICIES)}")
        return
    from scheduler_core.resources import QuantityError, parse_quantity

    containers = _containers(pod_spec, "containers") + _containers(pod_spec, "initContainers")
    try:
        for i, container in enumerate(containers):
            resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
            requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
            requests = requests or limits
            guaranteed = all(r in limits and r in requests and parse_quantity(requests[r]) ==
                             parse_quantity(limits[r]) for r in ("cpu", "memory"))
            if not guaranteed:
                err.add(f"{where}.template.spec", "task-topology-policy",
                        f"spec.task[{index}] isn't Guaranteed pod, kind=Burstable")
                return
            cpu = parse_quantity(requests["cpu"])
            if cpu != int(cpu):
                err.add(f"{where}.template.spec", "task-topology-policy",
                        f"the cpu request isn't  an integer in spec.task[{index}] container[{i}].")
                return
    except (QuantityError, ValueError, TypeError):
        return  # the reader names a bad quantity


def admit_queue(name: str, path: str, kind: str = "job") -> None:
    """The webhook's queue rules at create: the queue exists, is Open, and (schedweb's hierarchy)
    is a leaf; `path` is the manifest's spec.queue path."""
    from schedweb.core.models import ROOT_QUEUE_NAME, Queue

    if name == ROOT_QUEUE_NAME:
        message = f'"{ROOT_QUEUE_NAME}" is the implicit root queue; jobs go into leaf queues only.'
        raise ManifestError({path: [message]})
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise ManifestError({path: [denial("queue-exists", f'unable to find {kind} queue: queues.scheduling.'
                                                           f'volcano.sh "{name}" not found')]})
    if queue.state != "Open":
        message = (f"can only submit {kind} to queue with state `Open`, queue `{name}` status is "
                   f"`{queue.state}`")
        raise ManifestError({path: [denial("queue-open", message)]})
    if queue.children.exists():
        raise ManifestError({path: [denial("queue-leaf", f"can only submit {kind} to a leaf queue; queue "
                                                         f"`{name}` has child queues")]})

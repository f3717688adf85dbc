"""Request examples of the OpenAPI schema (shown and pre-filled by Swagger UI's "Try it out").

Keyed by (method, path) rather than operationId, so a renamed view keeps its examples. Each value
must be valid for its body schema (tests/schedweb/api/test_schema.py validates every one, and submits
the job example). Names refer to the demo cluster (`make run`): queue `default` always exists.
"""

from __future__ import annotations

from typing import Any

Example = dict[str, Any]  # {"summary": ..., "value": ...}

VCJOB_YAML = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi-hello
  namespace: demo
spec:
  queue: default
  minAvailable: 3
  tasks:
    - name: launcher
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: mpi-hello
              resources: {requests: {cpu: "1", memory: 1Gi}}
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: mpi-hello
              resources: {requests: {cpu: "2", memory: 4Gi}}
"""

CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
  - plugins:
      - name: priority
      - name: gang
  - plugins:
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
"""

# (method, path) -> {media type: {example name: example}}
REQUEST_EXAMPLES: dict[tuple[str, str], dict[str, dict[str, Example]]] = {
    ("post", "/api/v1/jobs/"): {"application/json": {
        "gang": {"summary": "A gang of a parameter server and two workers (all three start together)",
                 "value": {"namespace": "demo", "name": "tf-mnist", "queue": "default", "min_member": 3,
                           "tasks": [{"name": "tf-mnist-ps-0", "role": "ps",
                                      "request": {"cpu": "2", "memory": "8Gi"}, "duration": 600},
                                     {"name": "tf-mnist-worker-0", "role": "worker",
                                      "request": {"cpu": "4", "memory": "16Gi"}, "duration": 600},
                                     {"name": "tf-mnist-worker-1", "role": "worker",
                                      "request": {"cpu": "4", "memory": "16Gi"}, "duration": 600}]}},
        "gpu": {"summary": "One task on a GPU node (selector and toleration of the GPU taint)",
                "value": {"namespace": "demo", "name": "finetune", "queue": "default",
                          "tasks": [{"name": "finetune-0",
                                     "request": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 1},
                                     "node_selector": {"pool": "gpu"},
                                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                      "effect": "NoSchedule"}]}]}},
    }},
    ("post", "/api/v1/queues/"): {"application/json": {
        "team": {"summary": "A top-level team queue with its limits",
                 "value": {"name": "team-a", "parent": None, "weight": 2,
                           "capability": {"cpu": "64", "memory": "256Gi"},
                           "deserved": {"cpu": "32", "memory": "128Gi"}}}}},
    ("patch", "/api/v1/queues/{name}/"): {"application/json": {
        "weight": {"summary": "A bigger share", "value": {"weight": 3}}}},
    ("post", "/api/v1/nodes/"): {"application/json": {
        "node": {"summary": "A 32-core node with a zone label",
                 "value": {"name": "cpu-99", "allocatable": {"cpu": "32", "memory": "128Gi", "pods": 110},
                           "labels": {"zone": "a"}}}}},
    ("patch", "/api/v1/nodes/{name}/"): {"application/json": {
        "cordon": {"summary": "Cordon: no new tasks", "value": {"unschedulable": True}}}},
    ("post", "/api/v1/nodes/{name}/heartbeat/"): {"application/json": {
        "usage": {"summary": "Usage in percent", "value": {"cpu": 42.5, "memory": 61.0}}}},
    ("post", "/api/v1/tasks/{id}/status/"): {"application/json": {
        "running": {"summary": "The task started", "value": {"status": "Running"}},
        "succeeded": {"summary": "The task ended well", "value": {"status": "Succeeded"}}}},
    ("post", "/api/v1/priority-classes/"): {"application/json": {
        "high": {"summary": "A class that preempts lower ones",
                 "value": {"name": "urgent", "value": 5000, "description": "Deadline work."}}}},
    ("post", "/api/v1/namespace-quotas/"): {"application/json": {
        "quota": {"summary": "At most 40 cores and 160 GiB for namespace dev",
                  "value": {"namespace": "dev", "hard": {"cpu": "40", "memory": "160Gi"}}}}},
    ("post", "/api/v1/tokens/"): {"application/json": {
        "portal": {"summary": "A token for a portal, expiring",
                   "value": {"name": "portal", "expires": "2030-01-01T00:00:00Z"}}}},
    ("put", "/api/v1/scheduler-config/"): {"application/json": {
        "flat": {"summary": "Volcano's flat proportion", "value": {"yaml": CONF_YAML,
                                                                  "comment": "back to proportion"}}}},
    ("post", "/api/v1/scheduler-config/dry-run/"): {
        "application/json": {"conf": {"summary": "Try a configuration on the current state",
                                      "value": {"yaml": CONF_YAML}}},
        "application/yaml": {"conf": {"summary": "The same, as YAML", "value": CONF_YAML}}},
    ("post", "/api/v1/manifests/import/"): {
        "application/yaml": {"vcjob": {"summary": "A Volcano batch Job (three pods)", "value": VCJOB_YAML}},
        "application/json": {"vcjob": {"summary": "The same in JSON", "value": {"yaml": VCJOB_YAML}}}},
}


def add_request_examples(paths: dict[str, Any]) -> None:
    """Put REQUEST_EXAMPLES on the request bodies that exist (a media type the operation does
    not accept is skipped, so a changed view never gets a stray example)."""
    for (method, path), by_media in REQUEST_EXAMPLES.items():
        content = paths.get(path, {}).get(method, {}).get("requestBody", {}).get("content", {})
        for media, examples in by_media.items():
            if media in content:
                content[media]["examples"] = examples

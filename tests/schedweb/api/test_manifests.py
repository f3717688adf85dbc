"""Volcano manifest import/export: round trips keep every modelled field; errors name the manifest path."""

from __future__ import annotations

import pytest
import yaml

from schedweb.core import services
from schedweb.core.models import Job, Queue

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research, annotations: {owner: lab}}
spec:
  weight: 3
  reclaimable: false
  parent: root
  priority: 5
  capability: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8"}
  deserved: {cpu: "32", memory: 128Gi}
  guarantee: {resource: {cpu: 8500m, memory: 32Gi}}
status: {state: Open}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: archive}
spec: {weight: 2, reclaimable: true, parent: research}
status: {state: Closed}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research-nlp}
spec: {weight: 1, reclaimable: true, parent: research}
status: {state: Open}
"""

PODGROUP = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: pg1
  namespace: ml
  annotations: {sla-waiting-time: 1h30m0s, volcano.sh/preemptable: "false"}
spec:
  queue: research-nlp
  minMember: 2
  minTaskMember: {worker: 2}
  minResources: {cpu: "2", memory: 4Gi}
  priorityClassName: high
---
apiVersion: v1
kind: Pod
metadata:
  name: pg1-w0
  namespace: ml
  annotations: {scheduling.k8s.io/group-name: pg1, volcano.sh/task-spec: worker}
  labels: {app: train}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: "1", memory: 2Gi}}
  nodeSelector: {zone: a}
  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: v1
kind: Pod
metadata:
  name: pg1-w1
  namespace: ml
  annotations: {scheduling.k8s.io/group-name: pg1, volcano.sh/task-spec: worker,
                volcano.sh/preemptable: "false", schedweb.io/duration-seconds: "600"}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: 250m, memory: 512Mi}}
  priority: 50
  preemptionPolicy: Never
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
"""

VCJOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tf, namespace: ml}
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: research-nlp
  priorityClassName: high
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: 500m, memory: 1Gi}}
  - name: worker
    replicas: 2
    minAvailable: 2
    template:
      metadata: {labels: {role: worker}}
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}}
        nodeSelector: {accelerator: a100}
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
"""


@pytest.fixture
def staff(make_user, client_for):
    services.priority_class_create(name="high", value=1000)
    return client_for(make_user("ops", staff=True))


def _import(client, text: str, query: str = ""):
    return client.generic("POST", f"/api/v1/manifests/import/{query}", text.encode(),
                          content_type="application/yaml")


def _export(client, query: str) -> list[dict]:
    """The exported documents, without the default queue every installation has."""
    response = client.get(f"/api/v1/manifests/export/{query}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/yaml")
    return [d for d in yaml.safe_load_all(response.content.decode())
            if (d["kind"], d["metadata"]["name"]) != ("Queue", "default")]


def _user_queues() -> int:
    return Queue.objects.exclude(name="default").count()


def test_queue_round_trip(staff):
    response = _import(staff, QUEUES)
    assert response.status_code == 200, response.content
    assert response.json()["queues_created"] == ["research", "archive", "research-nlp"]
    assert Queue.objects.get(name="archive").state == "Closed"
    assert _export(staff, "?kind=Queue") == list(yaml.safe_load_all(QUEUES))


@pytest.mark.parametrize(("text", "kind"), [(PODGROUP, "PodGroup"), (VCJOB, "Job")])
def test_job_round_trip(staff, text, kind):
    assert _import(staff, QUEUES).status_code == 200
    response = _import(staff, text)
    assert response.status_code == 200, response.content
    assert _export(staff, f"?kind={kind}") == list(yaml.safe_load_all(text))


def test_vcjob_expands_replicas_into_tasks(staff):
    _import(staff, QUEUES + "---" + VCJOB)
    job = Job.objects.get(name="tf")
    assert (job.min_member, job.min_task_member, job.queue.name, job.priority_class.name) == (
        3, {"worker": 2}, "research-nlp", "high")
    assert sorted(job.tasks.values_list("name", "role")) == [
        ("tf-ps-0", "ps"), ("tf-worker-0", "worker"), ("tf-worker-1", "worker")]
    # Like Volcano's job controller: the first minAvailable pods' requests.
    assert job.min_resources == {"cpu": 4500, "memory": 9 * 2**30, "nvidia.com/gpu": 2000}
    assert job.tasks.get(name="tf-worker-1").request == {"cpu": 2000, "memory": 4 * 2**30,
                                                         "nvidia.com/gpu": 1000}


def test_reapply_updates_queues_and_dry_run_saves_nothing(staff):
    _import(staff, QUEUES)
    changed = QUEUES.replace("weight: 3", "weight: 7")
    dry = _import(staff, changed, "?dry_run=true").json()
    assert (dry["dry_run"], dry["queues_updated"], dry["queues_unchanged"]) == (
        True, ["research"], ["archive", "research-nlp"])
    assert dry["changes"][0] == {"document": "documents[0]", "kind": "Queue", "name": "research",
                                 "action": "updated",
                                 "diff": {"documents[0].spec.weight": {"from": 3, "to": 7}}}
    assert Queue.objects.get(name="research").weight == 3
    body = _import(staff, changed).json()
    assert (body["queues_updated"], body["queues_unchanged"]) == (["research"], ["archive", "research-nlp"])
    assert Queue.objects.get(name="research").weight == 7


def test_non_canonical_quantities_export_canonically(staff):
    text = ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {capability: {cpu: 0.5, memory: '1073741824'}}\n")
    assert _import(staff, text).status_code == 200
    assert _export(staff, "?kind=Queue")[0]["spec"]["capability"] == {"cpu": "500m", "memory": "1Gi"}


@pytest.mark.parametrize(("text", "field"), [
    ("kind: Queue\n", "documents[0].apiVersion"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "documents[0].kind"),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {colour: red}\n",
     "documents[0].spec.colour"),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: 0}\n",
     "documents[0].spec.weight"),
    ("a: [1,\n", "yaml"),
    (VCJOB, "documents[0].spec.queue"),                  # queue research-nlp does not exist
])
def test_import_errors_name_document_and_field(staff, text, field):
    response = _import(staff, text)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()
    assert _user_queues() == 0 and Job.objects.count() == 0


def test_import_is_all_or_nothing(staff):
    broken = QUEUES + "---\n" + VCJOB.replace("minAvailable: 3", "minAvailable: 9")
    response = _import(staff, broken)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"documents[3].spec.minAvailable": [
        "Volcano admission rule job-min-available-replicas: job 'minAvailable' should not be greater than "
        "total replicas in tasks"]}
    assert _user_queues() == 0


def test_import_checks_permissions(make_user, client_for):
    response = _import(client_for(make_user("nobody")), QUEUES)
    assert response.status_code == 403

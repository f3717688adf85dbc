"""Manifest import as `kubectl apply`: created / updated / unchanged, field diffs in dry runs,
409 for changes an object does not allow, and errors by manifest path."""

from __future__ import annotations

import pytest

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import Job, PriorityClass

from .conftest import make_node, make_queue
from .test_manifests import VCJOB

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research-nlp}
spec: {weight: 1}
"""


def _import(client, text: str, dry_run: bool = False):
    return client.generic("POST", f"/api/v1/manifests/import/{'?dry_run=true' if dry_run else ''}",
                          text.encode(), content_type="application/yaml")


@pytest.fixture
def staff(make_user, client_for):
    services.priority_class_create(name="high", value=1000)
    client = client_for(make_user("ops", staff=True))
    assert _import(client, QUEUE + "---" + VCJOB).status_code == 200
    return client


def _job_audit_updates() -> int:
    return AuditEntry.objects.filter(object_type="job", action="update").count()


def test_identical_reapply_is_unchanged_and_writes_nothing(staff):
    job = Job.objects.get(name="tf")
    body = _import(staff, VCJOB).json()
    assert (body["jobs_created"], body["jobs_updated"], body["jobs_unchanged"]) == ([], [], ["ml/tf"])
    assert body["changes"] == [{"document": "documents[0]", "kind": "Job", "name": "ml/tf",
                                "action": "unchanged", "diff": {}}]
    assert Job.objects.get(name="tf").updated == job.updated and _job_audit_updates() == 0


CHANGED = VCJOB.replace("replicas: 2", "replicas: 3").replace("accelerator: a100", "accelerator: h100")


def test_a_pending_job_is_replaced_and_the_dry_run_shows_the_diff(staff):
    job = Job.objects.get(name="tf")
    dry = _import(staff, CHANGED, dry_run=True).json()
    selector = "documents[0].spec.tasks[1].template.spec.nodeSelector.accelerator"
    diff = {"documents[0].spec.tasks[1].replicas": {"from": 2, "to": 3},
            selector: {"from": "a100", "to": "h100"}}
    assert dry["jobs_updated"] == ["ml/tf"] and dry["changes"][0]["diff"] == diff
    assert job.tasks.count() == 3  # the dry run wrote nothing
    real = _import(staff, CHANGED).json()
    assert real["changes"][0] == {"document": "documents[0]", "kind": "Job", "name": "ml/tf",
                                  "action": "updated", "diff": diff}
    job = Job.objects.get(pk=job.pk)  # same job, its tasks replaced
    assert sorted(job.tasks.values_list("name", flat=True)) == ["tf-ps-0", "tf-worker-0", "tf-worker-1",
                                                               "tf-worker-2"]
    assert job.tasks.get(name="tf-worker-2").node_selector == {"accelerator": "h100"}
    assert _job_audit_updates() == 1
    assert _import(staff, CHANGED).json()["jobs_unchanged"] == ["ml/tf"]


def _start(job: Job) -> None:
    node = make_node("n1", cpu="64", memory="256Gi")
    services.task_set_status(task=job.tasks.get(name="tf-ps-0"), status="Bound", node=node)


def test_a_started_job_refuses_changes_volcano_forbids_with_409(staff):
    job = Job.objects.get(name="tf")
    _start(job)
    text = VCJOB.replace('cpu: "2", memory: 4Gi', 'cpu: "3", memory: 4Gi')
    for dry_run in (True, False):
        response = _import(staff, text, dry_run=dry_run)
        assert response.status_code == 409, response.json()
        message = ("Job ml/tf has started (phase Pending): only minAvailable, the tasks' minAvailable, "
                   "priorityClassName and metadata may change.")
        assert response.json() == {"error": {"code": "conflict", "message": message, "fields": {
            "documents[0].spec.tasks[1].template.spec.containers[0].resources.requests.cpu": [message]}}}
    assert job.tasks.get(name="tf-worker-0").request["cpu"] == 2000


def test_a_started_job_takes_a_new_min_available_and_keeps_its_tasks(staff):
    job = Job.objects.get(name="tf")
    _start(job)
    body = _import(staff, VCJOB.replace("minAvailable: 3", "minAvailable: 2")).json()
    assert body["changes"][0]["diff"] == {"documents[0].spec.minAvailable": {"from": 3, "to": 2}}
    job = Job.objects.get(pk=job.pk)
    assert job.min_member == 2 and job.tasks.get(name="tf-ps-0").status == "Bound"


def test_a_finished_job_does_not_change(staff):
    job = services.job_cancel(job=Job.objects.get(name="tf"))
    assert _import(staff, VCJOB).json()["jobs_unchanged"] == ["ml/tf"]
    response = _import(staff, VCJOB.replace("minAvailable: 3", "minAvailable: 2"))
    assert response.status_code == 409
    assert response.json()["error"]["fields"] == {"documents[0].spec.minAvailable": [
        "Job ml/tf is Cancelled; a finished job does not change."]}
    assert Job.objects.get(pk=job.pk).min_member == 3


def test_a_pending_job_moves_queue(staff):
    make_queue("other")
    body = _import(staff, VCJOB.replace("queue: research-nlp", "queue: other")).json()
    assert body["changes"][0]["diff"] == {"documents[0].spec.queue": {"from": "research-nlp", "to": "other"}}
    assert Job.objects.get(name="tf").queue.name == "other"


def test_changing_someone_elses_job_is_forbidden_reapplying_it_unchanged_is_not(staff, make_user, client_for):
    make_queue("shared", submitter_users=[bob := make_user("bob")])
    text = VCJOB.replace("queue: research-nlp", "queue: shared").replace("name: tf,", "name: tf2,")
    ops = staff
    assert _import(ops, text).status_code == 200
    other = client_for(bob)
    assert _import(other, text).json()["jobs_unchanged"] == ["ml/tf2"]
    assert _import(other, text.replace("minAvailable: 3", "minAvailable: 2")).status_code == 403


PRIORITY_CLASS = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: for jobs that matter
"""


def test_priority_class_value_is_immutable_description_is_not(staff):
    response = _import(staff, PRIORITY_CLASS.replace("value: 1000", "value: 5"))
    assert response.status_code == 409
    assert response.json()["error"]["fields"] == {"documents[0].value": [
        "a PriorityClass's value may not be changed in an update (Kubernetes)"]}
    body = _import(staff, PRIORITY_CLASS).json()
    assert body["priority_classes_updated"] == ["high"]
    assert body["changes"][0]["diff"] == {
        "documents[0].description": {"from": None, "to": "for jobs that matter"}}
    assert PriorityClass.objects.get(name="high").description == "for jobs that matter"


@pytest.mark.parametrize(("text", "field"), [
    # A toleration's shape: the service names tasks[0].tolerations[0]..., the import the template.
    (VCJOB.replace("operator: Exists, effect: NoSchedule", "operator: Sometimes, effect: NoSchedule"),
     "documents[0].spec.tasks[1].template.spec.tolerations[0].operator"),
    (VCJOB.replace("priorityClassName: high", "priorityClassName: nope"),
     "documents[0].spec.priorityClassName"),
    (VCJOB.replace('nvidia.com/gpu: "1"', 'nvidia.com/gpu: "lots"'),
     "documents[0].spec.tasks[1].template.spec.containers"),
    (VCJOB.replace("namespace: ml", "namespace: Not_A_Label"), "documents[0].metadata.namespace"),
])
def test_errors_name_the_manifest_path(staff, text, field):
    response = _import(staff, text.replace("name: tf,", "name: tf3,"))
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [field], response.json()


def test_a_pod_error_names_the_pod_document(staff):
    text = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ml}
spec: {minMember: 1, queue: research-nlp}
---
apiVersion: v1
kind: Pod
metadata:
  name: pg-0
  namespace: ml
  annotations: {scheduling.k8s.io/group-name: pg}
spec:
  containers: [{name: main}]
  nodeSelector: {"bad key!": x}
"""
    response = _import(staff, text)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["documents[1].spec.nodeSelector"], response.json()


def test_a_manifest_naming_one_object_twice_is_refused(staff):
    response = _import(staff, QUEUE + "---" + QUEUE)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"documents[1].metadata.name": [
        "Queue research-nlp is also documents[0]; each object once per manifest."]}


@pytest.mark.parametrize(("old", "new", "field", "message"), [
    ("schedulerName: volcano", "schedulerName: volcano\n  maxRetry: .nan", "documents[0].spec.maxRetry",
     "Expected a finite number."),
    ("schedulerName: volcano", "schedulerName: volcano\n  runningEstimate: !!binary aGk=",
     "documents[0].spec.runningEstimate", "Expected a JSON value, not bytes."),
    ("{labels: {role: worker}}", "{labels: {role: worker, 7: x}}",
     "documents[0].spec.tasks[1].template.metadata.labels.7", "Keys must be strings, not int."),
])
def test_what_is_kept_must_be_json(staff, old, new, field, message):
    response = _import(staff, VCJOB.replace(old, new).replace("name: tf,", "name: tf4,"))
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {field: [message]}


PODGROUP = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ml}
spec: {minMember: 1, queue: research-nlp}
---
apiVersion: v1
kind: Pod
metadata:
  name: pg-0
  namespace: ml
  annotations: {scheduling.k8s.io/group-name: pg}
spec:
  containers: [{name: main, image: busybox}]
  nodeSelector: {zone: a}
"""


def test_a_podgroup_diff_names_the_pod_document_and_a_started_one_refuses_it(staff):
    assert _import(staff, PODGROUP).status_code == 200
    changed = PODGROUP.replace("zone: a", "zone: b")
    dry = _import(staff, changed, dry_run=True).json()
    assert dry["changes"][0]["diff"] == {"documents[1].spec.nodeSelector.zone": {"from": "a", "to": "b"}}
    node = make_node("n1", cpu="8", memory="8Gi")
    services.task_set_status(task=Job.objects.get(name="pg").tasks.get(), status="Bound", node=node)
    response = _import(staff, changed.replace("minMember: 1", "minMember: 0"))
    assert response.status_code == 409
    assert list(response.json()["error"]["fields"]) == ["documents[1].spec.nodeSelector.zone"]

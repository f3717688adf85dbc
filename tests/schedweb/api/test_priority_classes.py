"""PriorityClass: Kubernetes' globalDefault (at most one; jobs submitted without a class get it,
at submit time), through the REST API, the services and the manifests (v1 and v1beta1)."""

from __future__ import annotations

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from schedweb.core import services
from schedweb.core.models import Job, PriorityClass

from .conftest import job_body, make_job, make_queue

ONE_DEFAULT = "PriorityClass 'batch' is already marked as default. Only one default can exist."


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def test_rest_create_read_and_move_the_global_default(staff):
    created = staff.post("/api/v1/priority-classes/", {"name": "batch", "value": 10, "global_default": True},
                         format="json")
    assert created.status_code == 201, created.content
    assert created.json() == {"id": created.json()["id"], "name": "batch", "value": 10,
                              "preemption_policy": "PreemptLowerPriority", "description": "",
                              "global_default": True}
    second = staff.post("/api/v1/priority-classes/", {"name": "other", "value": 5, "global_default": True},
                        format="json")
    assert second.status_code == 400
    assert second.json()["error"]["fields"] == {"global_default": [ONE_DEFAULT]}
    other = staff.post("/api/v1/priority-classes/", {"name": "other", "value": 5}, format="json")
    assert other.status_code == 201
    # Moving the default: unset it on one class, then set it on the other.
    refused = staff.patch("/api/v1/priority-classes/other/", {"global_default": True}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {"global_default": [ONE_DEFAULT]}
    assert staff.patch("/api/v1/priority-classes/batch/", {"global_default": False},
                       format="json").json()["global_default"] is False
    assert staff.patch("/api/v1/priority-classes/other/", {"global_default": True},
                       format="json").json()["global_default"] is True
    # A PATCH without the field keeps it.
    assert staff.patch("/api/v1/priority-classes/other/", {"description": "x"},
                       format="json").json()["global_default"] is True


def test_the_database_holds_at_most_one_default(db):
    PriorityClass.objects.create(name="a", value=1, global_default=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        PriorityClass.objects.create(name="b", value=2, global_default=True)


def test_service_refuses_a_non_boolean(db):
    with pytest.raises(ValidationError) as err:
        services.priority_class_create(name="a", value=1, global_default="yes")
    assert err.value.message_dict == {"global_default": ["Expected true or false."]}


def test_jobs_without_a_class_get_the_default_at_submit_time(db, make_user, client_for):
    queue = make_queue("q")
    before = make_job(queue, "before", tasks=1)
    batch = services.priority_class_create(name="batch", value=10, global_default=True)
    high = services.priority_class_create(name="high", value=1000)
    client = client_for(make_user("ops", staff=True))
    assert client.post("/api/v1/jobs/", job_body("q", "plain"), format="json").status_code == 201
    assert client.post("/api/v1/jobs/", job_body("q", "classy", priority_class="high"),
                       format="json").status_code == 201
    classes = dict(Job.objects.values_list("name", "priority_class_id"))
    # As Kubernetes' admission: set when the job is admitted, never rewritten later.
    assert classes == {"before": None, "plain": batch.id, "classy": high.id}
    assert Job.objects.get(pk=before.pk).priority_class_id is None
    assert make_job(queue, "service", tasks=1).priority_class_id == batch.id


V1BETA1 = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000
globalDefault: false
description: This priority class should be used for volcano job only.
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: -5
globalDefault: true
preemptionPolicy: Never
"""


def _import(client, text: str):
    return client.generic("POST", "/api/v1/manifests/import/", text.encode(), content_type="application/yaml")


def test_manifest_import_and_export_both_versions(staff):
    body = _import(staff, V1BETA1).json()
    assert body["priority_classes_created"] == ["high-priority", "low"]
    low = PriorityClass.objects.get(name="low")
    assert (low.value, low.global_default, low.preemption_policy) == (-5, True, "Never")
    exported = list(yaml.safe_load_all(staff.get("/api/v1/manifests/export/?kind=PriorityClass").content))
    assert exported == [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high-priority"},
         "value": 1000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority",
         "description": "This priority class should be used for volcano job only."},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
         "value": -5, "globalDefault": True, "preemptionPolicy": "Never"},
    ]
    # The default export starts with the classes, so it imports back into an empty installation.
    kinds = [d["kind"] for d in yaml.safe_load_all(staff.get("/api/v1/manifests/export/").content)]
    assert kinds[:3] == ["PriorityClass", "PriorityClass", "Queue"]


PC_HEAD = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\n"


@pytest.mark.parametrize(("body", "field", "message"), [
    ("description: x\n", "documents[0].value", "This field is required."),
    ("value: '1000'\n", "documents[0].value", "Must be an integer."),
    ("value: true\n", "documents[0].value", "Must be an integer."),
    ("value: 1\ncolour: red\n", "documents[0].colour", "Unknown or unsupported field."),
    ("value: 1\npreemptionPolicy: Sometimes\n", "documents[0].preemptionPolicy",
     "Unsupported value 'Sometimes': supported values are PreemptLowerPriority, Never."),
    ("value: 1\nglobalDefault: 'yes'\n", "documents[0].globalDefault", "Expected true or false."),
    ("value: 1\ndescription: [x]\n", "documents[0].description", "Expected a string."),
])
def test_manifest_shape_errors(staff, body, field, message):
    response = _import(staff, PC_HEAD + body)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {field: [message]}


def test_only_staff_create_classes_but_anyone_reapplies_them_unchanged(staff, make_user, client_for):
    assert _import(staff, V1BETA1).status_code == 200
    user = client_for(make_user("bob"))
    assert _import(user, V1BETA1).json()["priority_classes_unchanged"] == ["high-priority", "low"]
    assert _import(user, V1BETA1.replace("name: low", "name: lower").replace(
        "globalDefault: true", "globalDefault: false")).status_code == 403

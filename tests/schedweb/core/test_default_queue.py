"""The default queue (DEFAULT_QUEUE): every installation has it, jobs naming no queue go there,
it cannot be deleted or renamed (closing it is allowed), as Volcano's `default` queue."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection
from rest_framework.test import APIClient

from schedweb.core import services
from schedweb.core.default_queue import ensure_default_queue
from schedweb.core.models import Queue

TASKS = [{"name": "t-0", "request": {"cpu": "1"}}]
PROTECTED = ("Queue 'default' is the default queue (DEFAULT_QUEUE): jobs that name no queue go there, so it "
             "cannot be deleted; close it instead.")


@pytest.fixture
def staff(db, django_user_model):
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("ops", is_staff=True))
    return client


def test_the_migrations_create_it(db):
    queue = Queue.objects.get(name="default")
    assert (queue.parent_id, queue.weight, queue.reclaimable, queue.state, queue.priority, queue.capability,
            queue.deserved, queue.guarantee) == (None, 1, True, "Open", 0, None, None, None)


def test_the_data_migration_creates_it_only_when_absent(db):
    migration = importlib.import_module("schedweb.core.migrations.0007_default_queue")
    editor = SimpleNamespace(connection=connection)
    Queue.objects.filter(name="default").update(weight=5)
    migration.create_default_queue(apps, editor)
    assert list(Queue.objects.filter(name="default").values_list("weight", flat=True)) == [5]
    Queue.objects.filter(name="default").delete()
    migration.create_default_queue(apps, editor)
    assert Queue.objects.get(name="default").weight == 1


def test_a_json_job_without_queue_goes_to_it(staff):
    response = staff.post("/api/v1/jobs/", {"namespace": "ns1", "name": "j", "tasks": TASKS}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["queue"] == "default"


def test_the_service_puts_a_job_without_queue_there_and_recreates_it_if_gone(db):
    Queue.objects.filter(name="default").delete()  # a database restored without it
    job = services.job_submit(namespace="ns1", name="j", tasks=TASKS)
    assert job.queue.name == "default" and job.queue.weight == 1 and job.queue.reclaimable


def test_it_cannot_be_deleted(staff):
    response = staff.delete("/api/v1/queues/default/")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid", "message": f"queue: {PROTECTED}",
                                        "fields": {"queue": [PROTECTED]}}
    assert Queue.objects.filter(name="default").exists()


def test_it_can_be_closed_and_opened(staff):
    # Volcano's queue webhook refuses deleting `default`, not closing it.
    assert staff.post("/api/v1/queues/default/close/").json()["state"] == "Closed"
    refused = staff.post("/api/v1/jobs/", {"namespace": "ns1", "name": "j", "tasks": TASKS}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {
        "queue": ["Queue 'default' is Closed; it accepts no new jobs."]}
    assert staff.post("/api/v1/queues/default/open/").json()["state"] == "Open"


def test_it_cannot_be_renamed(db):
    with pytest.raises(ValidationError) as err:
        services.queue_update(queue=Queue.objects.get(name="default"), name="other")
    assert err.value.message_dict == {"name": [
        "Queue 'default' is the default queue (DEFAULT_QUEUE); it cannot be renamed."]}
    services.queue_update(queue=Queue.objects.get(name="default"), weight=3)  # other changes are fine
    assert Queue.objects.get(name="default").weight == 3


def test_its_name_is_a_setting(db, settings):
    settings.DEFAULT_QUEUE = "batch"
    job = services.job_submit(namespace="ns1", name="j", tasks=TASKS)
    assert job.queue.name == "batch" and ensure_default_queue().pk == job.queue.pk
    with pytest.raises(ValidationError) as err:
        services.queue_delete(queue=Queue.objects.get(name="batch"))
    assert "is the default queue" in err.value.message_dict["queue"][0]
    services.queue_delete(queue=Queue.objects.get(name="default"))  # no longer the default: an ordinary queue
    assert not Queue.objects.filter(name="default").exists()


def test_a_manifest_job_without_queue_goes_to_the_configured_one(staff, settings):
    settings.DEFAULT_QUEUE = "batch"
    text = ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
            "  - {name: main, replicas: 1, template: {spec: {containers: [{name: main}]}}}\n")
    response = staff.generic("POST", "/api/v1/manifests/import/", text.encode(),
                             content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert Queue.objects.get(name="batch").jobs.get().name == "j"


@pytest.mark.parametrize("value", ["root", "no spaces", "-dash"])
def test_a_bad_setting_stops_the_process(value):
    env = {**os.environ, "DEBUG": "1", "DEFAULT_QUEUE": value, "DJANGO_SETTINGS_MODULE": "schedweb.settings"}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"DEFAULT_QUEUE {value!r} must be a queue name" in done.stderr

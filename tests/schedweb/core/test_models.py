"""Models and migrations (applied on the test database, nothing missing) and the admin, which
must write only through the services."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from schedweb.core import services
from schedweb.core.models import Job, Node, Queue, SchedulerConfig

GI = 2**30


@pytest.mark.django_db
def test_migrations_applied_on_configured_database(settings):
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    expected = "postgresql" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "sqlite"
    assert connection.vendor == expected
    assert ("core", "0001_initial") in executor.loader.applied_migrations


@pytest.mark.django_db
def test_no_missing_core_migrations():
    out = StringIO()
    call_command("makemigrations", "core", "--check", "--dry-run", stdout=out)
    assert out.getvalue().strip() == "No changes detected in app 'core'"


@pytest.mark.django_db
@pytest.mark.parametrize(("model", "fields"), [
    (Queue, {"name": "root"}),
    (Queue, {"name": "q", "weight": 0}),
])
def test_database_constraints_back_the_services(model, fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.create(**fields)


@pytest.mark.django_db
def test_only_one_active_config():
    SchedulerConfig.objects.create(version=1, yaml="x", active=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        SchedulerConfig.objects.create(version=2, yaml="y", active=True)


@pytest.fixture
def admin_client_with_data(admin_client):
    top = services.queue_create(name="top")
    leaf = services.queue_create(name="leaf", parent=top)
    services.node_create(name="n1", allocatable={"cpu": "4", "memory": "8Gi"})
    services.priority_class_create(name="high", value=10)
    services.namespace_quota_set(namespace="ns1", hard={"cpu": "2"})
    services.job_submit(namespace="ns1", name="j1", queue=leaf, tasks=[{"name": "t1"}])
    return admin_client


@pytest.mark.parametrize(("model", "query"), [
    ("queue", "?q=to&state__exact=Open"), ("node", "?q=n&unschedulable__exact=0"),
    ("priorityclass", "?q=hi&preemption_policy__exact=Never"), ("namespacequota", "?q=ns"),
    ("job", "?q=j1&phase__exact=Pending"), ("task", "?q=t1&status__exact=Pending"),
    ("schedulerconfig", "?q=x&active__exact=1"),
])
def test_admin_lists_search_and_filter(admin_client_with_data, model, query):
    response = admin_client_with_data.get(f"/admin/core/{model}/{query}")
    assert response.status_code == 200
    assert "search" in response.content.decode().lower()


def test_admin_add_queue_goes_through_service(admin_client_with_data):
    bad = admin_client_with_data.post("/admin/core/queue/add/", {
        "name": "q2", "weight": 0, "priority": 0, "state": "Open", "capability": '{"cpu": "2"}'})
    assert bad.status_code == 200
    assert bad.context["adminform"].form.errors == {"weight": ["Must be at least 1, got 0."]}
    cycle = admin_client_with_data.post(f"/admin/core/queue/{Queue.objects.get(name='top').pk}/change/", {
        "name": "top", "parent": Queue.objects.get(name="leaf").pk, "weight": 1, "priority": 0,
        "state": "Open"})
    assert cycle.context["adminform"].form.errors == {
        "parent": ["Queue 'top' cannot be placed under 'leaf': that would make a cycle."]}
    root = admin_client_with_data.post("/admin/core/queue/add/", {"name": "root", "weight": 1, "priority": 0,
                                                                   "state": "Open"})
    assert root.context["adminform"].form.errors == {
        "name": ['The name "root" is reserved for the implicit root queue.']}
    assert sorted(Queue.objects.values_list("name", flat=True)) == ["default", "leaf", "top"]
    good = admin_client_with_data.post("/admin/core/queue/add/", {
        "name": "q2", "weight": 2, "priority": 0, "state": "Open", "reclaimable": "on",
        "capability": '{"cpu": "500m", "memory": "1Gi"}'})
    assert good.status_code == 302
    assert Queue.objects.get(name="q2").capability == {"cpu": 500.0, "memory": float(GI)}


def test_admin_node_edit_round_trips_quantities(admin_client_with_data):
    node = Node.objects.get(name="n1")
    page = admin_client_with_data.get(f"/admin/core/node/{node.pk}/change/")
    shown = page.context["adminform"].form.initial["allocatable"]
    assert shown == {"cpu": 4, "memory": 8 * GI, "pods": 110}
    import json
    saved = admin_client_with_data.post(f"/admin/core/node/{node.pk}/change/", {
        "name": "n1", "allocatable": json.dumps(shown), "labels": "{}", "taints": "[]"})
    assert saved.status_code == 302
    node.refresh_from_db()
    assert node.allocatable == {"cpu": 4000.0, "memory": float(8 * GI), "pods": 110}
    bad = admin_client_with_data.post(f"/admin/core/node/{node.pk}/change/", {
        "name": "n1", "allocatable": '{"cpu": "12x"}', "labels": "{}", "taints": "[]"})
    assert "cpu: invalid quantity '12x'" in bad.context["adminform"].form.errors["allocatable"][0]


def test_admin_delete_refused_by_service_is_protected(admin_client_with_data):
    top = Queue.objects.get(name="top")
    page = admin_client_with_data.get(f"/admin/core/queue/{top.pk}/delete/")
    assert "Queue &#x27;top&#x27; has child queues" in page.content.decode()
    admin_client_with_data.post(f"/admin/core/queue/{top.pk}/delete/", {"post": "yes"})
    assert Queue.objects.filter(name="top").exists()


def test_admin_scheduler_config_add_validates_and_activates(admin_client_with_data, admin_user):
    bad = admin_client_with_data.post("/admin/core/schedulerconfig/add/", {"yaml": "actions: 'teleport'\n"})
    assert "teleport" in bad.context["adminform"].form.errors["yaml"][0]
    good = admin_client_with_data.post("/admin/core/schedulerconfig/add/", {
        "yaml": "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n", "comment": "c"})
    assert good.status_code == 302
    config = SchedulerConfig.objects.get(active=True)
    assert (config.version, config.comment, config.created_by) == (1, "c", admin_user)


def test_admin_jobs_are_cancelled_not_edited(admin_client_with_data):
    job = Job.objects.get()
    assert admin_client_with_data.get("/admin/core/job/add/").status_code == 403
    response = admin_client_with_data.post("/admin/core/job/", {"action": "cancel_jobs",
                                                                 "_selected_action": [job.pk]})
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.phase == "Cancelled"

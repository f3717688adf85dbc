"""Pod specs stored once per distinct spec (core.TaskSpec), however many replicas share one.

Regression of issue 33's acceptance: a 1000-replica gang with a 28 KB affinity stored 1000 copies
of it (27 s to submit, a full reload fetching every copy). Now: one row, referenced by every
replica; the API shows each task with its spec as before; the loader reads the spec once and
the tasks of a template share the same decoded objects.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_delete
from schedweb.core.models import Job, Task, TaskSpec
from schedweb.core.task_spec_values import SPEC_DEFAULTS, spec_digest
from schedweb.core.task_specs import prune_task_specs, spec_id_for
from schedweb.scheduling.adapter import Decoder, load_state

pytestmark = pytest.mark.django_db

AFFINITY = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1 + i, "podAffinityTerm": {
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In",
                                                "values": [f"v{i}-{v}" for v in range(5)]}]},
        "topologyKey": "kubernetes.io/hostname"}} for i in range(10)]}}


@pytest.fixture
def leaf(db) -> Any:
    services.node_create(name="n1", allocatable={"cpu": "8", "memory": "32Gi"})
    return services.queue_create(name="leaf")


def gang(name: str, replicas: int, affinity: Any = AFFINITY, labels: dict | None = None) -> Job:
    return services.job_submit(namespace="ns", name=name, queue="leaf", min_member=replicas, tasks=[
        {"name": "w", "replicas": replicas, "request": {"cpu": "1"}, "labels": labels or {"app": "x"},
         "affinity": affinity, "tolerations": [{"key": "k", "operator": "Exists"}]}])


def test_replicas_share_one_spec_row(leaf):
    job = gang("g", 200)
    assert Task.objects.filter(job=job).count() == 200
    assert TaskSpec.objects.count() == 1
    spec = TaskSpec.objects.get()
    assert set(Task.objects.filter(job=job).values_list("spec_id", flat=True)) == {spec.id}
    assert spec.affinity == AFFINITY and spec.labels == {"app": "x"}
    assert spec.digest == spec_digest(spec.values())


def test_equal_specs_of_two_jobs_share_a_row_a_different_one_gets_its_own(leaf):
    gang("a", 3)
    gang("b", 2)
    assert TaskSpec.objects.count() == 1
    gang("c", 2, labels={"app": "y"})
    assert TaskSpec.objects.count() == 2
    # Key order does not matter: the digest is of the canonical JSON.
    swapped = {"labels": {"app": "x"}, "affinity": AFFINITY,
               "tolerations": [{"operator": "Exists", "key": "k"}]}
    assert spec_id_for(**swapped) == Task.objects.filter(job__name="a").first().spec_id


def test_the_api_shows_every_task_with_its_spec_as_before(leaf, client, django_user_model):
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    job = gang("g", 5)
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert len(body["tasks"]) == 5
    for task in body["tasks"]:
        assert task["affinity"] == AFFINITY and task["labels"] == {"app": "x"}
        assert task["tolerations"] == [{"key": "k", "operator": "Exists"}]
        assert task["node_selector"] == {} and task["topology_spread_constraints"] == []
    listed = client.get(f"/api/v1/tasks/?job={job.pk}").json()["results"]
    assert [t["affinity"] for t in listed] == [AFFINITY] * 5


def test_task_attributes_read_and_write_through_the_spec(leaf):
    job = gang("g", 2)
    first, second = Task.objects.filter(job=job).order_by("name")
    old_spec = first.spec_id
    first.node_selector = {"pool": "gpu"}
    first.save()
    first.refresh_from_db()
    assert first.node_selector == {"pool": "gpu"} and first.affinity == AFFINITY
    assert first.spec_id != old_spec
    second.refresh_from_db()
    assert second.spec_id == old_spec and second.node_selector == {}  # the shared row never changes
    made = Task.objects.create(job=job, name="plain")
    assert made.spec.values() == SPEC_DEFAULTS
    bulk = Task.objects.bulk_create([Task(job=job, name="b0", labels={"app": "z"}), Task(job=job, name="b1")])
    assert [Task.objects.get(pk=t.pk).labels for t in bulk] == [{"app": "z"}, {}]


def test_the_loader_reads_a_spec_once_and_its_tasks_share_the_objects(leaf):
    gang("g", 50)
    gang("h", 30, labels={"app": "other"})
    state = load_state(timezone.now())
    tasks = [t for job in state.snapshot.jobs.values() for t in job.tasks.values()]
    assert len(tasks) == 80
    by_job: dict[str, set[int]] = {}
    for t in tasks:
        by_job.setdefault(t.job_uid, set()).add(id(t.affinity))
        assert t.affinity == AFFINITY
    assert [len(ids) for ids in by_job.values()] == [1, 1]  # one decoded object per template
    assert state.queries == 7  # the six statements, plus one for the specs


def test_a_kept_decoder_reads_no_spec_it_decoded_already(leaf):
    gang("g", 4)
    dec = Decoder()
    assert load_state(timezone.now(), dec).queries == 7
    gang("h", 4)  # the same spec
    assert load_state(timezone.now(), dec).queries == 6


def test_pruning_deletes_only_the_specs_no_task_has(leaf):
    gang("a", 2)
    gang("b", 2, labels={"app": "gone"})
    Job.objects.filter(name="b").delete()  # below the services: its tasks go, its spec stays
    assert TaskSpec.objects.count() == 2
    assert prune_task_specs() == 1
    assert list(TaskSpec.objects.values_list("labels", flat=True)) == [{"app": "x"}]


def test_deleting_a_job_drops_its_spec_unless_another_job_shares_it(leaf):
    gang("a", 2)
    gang("b", 2)
    gang("c", 2, labels={"app": "own"})
    for name in ("b", "c"):
        job = services.job_cancel(job=Job.objects.get(name=name))
        job_delete(job=job)
    assert list(TaskSpec.objects.values_list("labels", flat=True)) == [{"app": "x"}]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement insert is PostgreSQL's")
def test_a_known_spec_costs_one_read_a_new_one_a_read_and_an_insert(leaf, django_assert_num_queries):
    gang("a", 2)
    # The context read, the savepoint pair, the queue lock, the spec read, the job+task insert.
    with django_assert_num_queries(6):
        gang("b", 100)
    with django_assert_num_queries(7):  # and the new spec's insert
        gang("c", 100, labels={"app": "new"})

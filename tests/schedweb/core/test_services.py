"""schedweb.core.services: every rejection names its field, says why, and saves nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from schedweb.core import services
from schedweb.core.models import Job, NamespaceQuota, Node, PriorityClass, Queue, SchedulerConfig, Task

GI = 2**30
CONF = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"


@pytest.fixture
def cluster(db) -> dict[str, Any]:
    """top > mid > leaf, a closed leaf, node n1, priority class high, job ns1/j1 (task j1-0 on n1)."""
    top = services.queue_create(name="top")
    mid = services.queue_create(name="mid", parent=top)
    leaf = services.queue_create(name="leaf", parent=mid)
    closed = services.queue_create(name="closed")
    services.queue_set_state(queue=closed, state="Closed")
    node = services.node_create(name="n1", allocatable={"cpu": "8", "memory": "32Gi"})
    services.priority_class_create(name="high", value=1000)
    job = services.job_submit(namespace="ns1", name="j1", queue=leaf, phase="Running",
                              tasks=[{"name": "j1-0", "request": {"cpu": "1"}, "status": "Running",
                                      "node": "n1"}])
    return {"top": top, "mid": mid, "leaf": leaf, "node": node, "job": job, "task": job.tasks.get()}


def db_state() -> tuple:
    """Everything the services write, to prove a rejected call saved nothing."""
    return tuple(
        list(model.objects.order_by("pk").values())
        for model in (Queue, Node, PriorityClass, Job, Task, NamespaceQuota, SchedulerConfig)
    )


def task(name: str = "t-0", **extra: Any) -> dict[str, Any]:
    """A task dict for job_submit."""
    return {"name": name, "request": {"cpu": "1", "memory": "1Gi"}, **extra}


def submit(**kwargs: Any) -> Callable[[dict], Any]:
    """A deferred job_submit into leaf with one task unless overridden."""
    def call(c: dict) -> Any:
        args = {"namespace": "ns1", "name": "new", "queue": c["leaf"], "tasks": [task()], **kwargs}
        args = {k: (c[v[1:]] if isinstance(v, str) and v.startswith("@") else v) for k, v in args.items()}
        return services.job_submit(**args)
    return call


REJECTIONS: list[tuple[str, Callable[[dict], Any], str, str]] = [
    # (case, call, field, expected message part)
    ("malformed quantity", lambda c: services.node_create(name="n2", allocatable={"cpu": "12x"}),
     "allocatable", "cpu: invalid quantity '12x'"),
    ("malformed queue quantity", lambda c: services.queue_create(name="q", capability={"memory": "1_000"}),
     "capability", "memory: invalid quantity '1_000'"),
    ("quantity of wrong type", lambda c: services.queue_create(name="q", deserved={"cpu": [1]}),
     "deserved", "cpu: quantity must be a string or a number, not [1]."),
    ("resource map not an object", lambda c: services.queue_create(name="q", guarantee="lots"),
     "guarantee", "Expected an object of resource name -> quantity"),
    ("malformed task request", submit(tasks=[task(request={"cpu": "two"})]),
     "tasks[0].request", "cpu: invalid quantity 'two'"),
    ("negative allocatable", lambda c: services.node_create(name="n2", allocatable={"memory": "-1Gi"}),
     "allocatable", "memory: quantity must not be negative, got '-1Gi'."),
    ("negative number", lambda c: services.queue_create(name="q", capability={"cpu": -2}),
     "capability", "cpu: quantity must not be negative, got '-2'."),
    ("negative task request", submit(tasks=[task(request={"nvidia.com/gpu": "-1"})]),
     "tasks[0].request", "nvidia.com/gpu: quantity must not be negative, got '-1'."),
    ("fractional pods", lambda c: services.node_create(name="n2", allocatable={"cpu": "1", "pods": "1.5"}),
     "allocatable", "pods: must be a whole number between 0 and 2147483647, got '1.5'."),
    ("weight 0 on create", lambda c: services.queue_create(name="q", weight=0),
     "weight", "Must be at least 1, got 0."),
    ("weight -3 on update", lambda c: services.queue_update(queue=c["mid"], weight=-3),
     "weight", "Must be at least 1, got -3."),
    ("parent cycle", lambda c: services.queue_update(queue=c["top"], parent=c["leaf"]),
     "parent", "Queue 'top' cannot be placed under 'leaf': that would make a cycle."),
    ("own parent", lambda c: services.queue_update(queue=c["mid"], parent="mid"),
     "parent", "Queue 'mid' cannot be placed under 'mid': that would make a cycle."),
    ("unknown parent", lambda c: services.queue_create(name="q", parent="ghost"),
     "parent", "Unknown queue 'ghost'."),
    ("child under a queue with jobs", lambda c: services.queue_create(name="q", parent="leaf"),
     "parent", "Queue 'leaf' holds jobs; only leaf queues hold jobs"),
    ("job in a queue with children", submit(queue="@mid"),
     "queue", "Queue 'mid' has child queues; jobs go into leaf queues only."),
    ("job in a closed queue", submit(queue="closed"),
     "queue", "Queue 'closed' is Closed; it accepts no new jobs."),
    ("task on unknown node", submit(tasks=[task(status="Running", node="ghost")]),
     "tasks[0].node", "Unknown node 'ghost'."),
    ("running task without node", submit(tasks=[task(status="Running")]),
     "tasks[0].node", "A Running task needs a node."),
    ("status change to unknown node",
     lambda c: services.task_set_status(task=c["task"], status="Releasing", node="ghost"),
     "node", "Unknown node 'ghost'."),
    ("duplicate queue", lambda c: services.queue_create(name="mid"),
     "name", "A queue named 'mid' already exists."),
    ("duplicate queue on rename", lambda c: services.queue_update(queue=c["mid"], name="top"),
     "name", "A queue named 'top' already exists."),
    ("duplicate node", lambda c: services.node_create(name="n1", allocatable={"cpu": "1"}),
     "name", "A node named 'n1' already exists."),
    ("duplicate priority class", lambda c: services.priority_class_create(name="high", value=1),
     "name", "A priority class named 'high' already exists."),
    ("duplicate job", submit(name="j1"), "name", "Job ns1/j1 already exists."),
    ("duplicate task in job", submit(tasks=[task("a"), task("a")]), "tasks[1].name",
     "Duplicate task name 'a' (also tasks[0])."),
    ("task named as a replica", submit(tasks=[task("w", replicas=2), task("new-w-1")]), "tasks[1].name",
     "Duplicate task name 'new-w-1' (also tasks[0])."),
    ("negative replicas", submit(tasks=[task("w", replicas=-1)]), "tasks[0].replicas",
     "Must be at least 0, got -1."),
    ("replica names too long", submit(tasks=[task("w" * 60, replicas=2)]), "tasks[0].name",
     "Its replicas would be named new-wwww"),
    ("a replicated entry's name is a DNS label", submit(tasks=[task("w.x", replicas=2)]), "tasks[0].name",
     "Task name 'w.x' is not a lowercase RFC 1123 label"),
    ("a task name is a pod name", submit(tasks=[task("w" * 64)]), "tasks[0].name",
     "Task name 'wwww"),
    ("min_member above task count", submit(min_member=3, tasks=[task("a"), task("b")]),
     "min_member", "min_member 3 is above the task count 2."),
    ("min_task_member above role count", submit(min_task_member={"worker": 2}, tasks=[task(role="worker")]),
     "min_task_member", "Role 'worker' needs 2 task(s) but the job has 1."),
    ("queue named root", lambda c: services.queue_create(name="root"),
     "name", 'The name "root" is reserved for the implicit root queue.'),
    ("rename to root", lambda c: services.queue_update(queue=c["mid"], name="root"),
     "name", 'The name "root" is reserved'),
    ("bad name", lambda c: services.node_create(name="a b", allocatable={"cpu": "1"}),
     "name", "Name 'a b' is not a lowercase RFC 1123 subdomain"),
    ("bad namespace", submit(namespace="Bad_NS"), "namespace", "Namespace 'Bad_NS' must be a DNS label"),
    ("unknown priority class", submit(priority_class="nope"),
     "priority_class", "Unknown priority class 'nope'."),
    ("no tasks", submit(tasks=[]), "tasks", "A job needs at least one task."),
    ("unknown task key", submit(tasks=[task(gpu=1)]), "tasks[0].gpu", "Unknown field."),
    ("bad taint effect", lambda c: services.node_create(
        name="n2", allocatable={"cpu": "1"}, taints=[{"key": "k", "effect": "Sometimes"}]),
     "taints", "Taint 0: effect must be one of NoSchedule, PreferNoSchedule, NoExecute, not 'Sometimes'."),
    ("bad preemption policy",
     lambda c: services.priority_class_create(name="p", value=1, preemption_policy="x"),
     "preemption_policy", "'x' is not one of PreemptLowerPriority, Never."),
    ("heartbeat above 100", lambda c: services.node_heartbeat(node=c["node"], usage_cpu=101, usage_memory=5),
     "usage_cpu", "Expected a percentage between 0 and 100, not 101."),
    ("illegal transition", lambda c: services.task_set_status(task=c["task"], status="Pending"),
     "status", "A Running task cannot become Pending."),
    ("delete queue with children", lambda c: services.queue_delete(queue=c["top"]),
     "queue", "Queue 'top' has child queues; delete or move them first."),
    ("delete queue with jobs", lambda c: services.queue_delete(queue=c["leaf"]),
     "queue", "Queue 'leaf' has jobs; it can be deleted once they are gone."),
    ("delete busy node", lambda c: services.node_delete(node=c["node"]),
     "node", "Node 'n1' still holds 1 task(s); drain it first."),
    ("bad quota", lambda c: services.namespace_quota_set(namespace="ns1", hard={"cpu": "ten"}),
     "hard", "cpu: invalid quantity 'ten'"),
    ("unknown scheduler plugin", lambda c: services.scheduler_config_activate(
        yaml="actions: \"allocate\"\ntiers:\n- plugins:\n  - name: teleport\n"),
     "yaml", "teleport"),
    ("empty scheduler config", lambda c: services.scheduler_config_activate(yaml="  "),
     "yaml", "The configuration is empty."),
]


@pytest.mark.parametrize(("call", "field", "message"), [r[1:] for r in REJECTIONS],
                         ids=[r[0] for r in REJECTIONS])
def test_rejection_names_field_and_saves_nothing(cluster, call, field, message):
    before = db_state()
    with pytest.raises(ValidationError) as caught:
        call(cluster)
    errors = caught.value.message_dict
    assert list(errors) == [field]
    assert len(errors[field]) == 1 and message in errors[field][0], errors
    assert db_state() == before


def test_quantities_are_stored_canonically(db):
    node = services.node_create(name="g1", allocatable={"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2})
    assert node.allocatable == {"cpu": 500.0, "memory": float(GI), "nvidia.com/gpu": 2000.0, "pods": 110}
    queue = services.queue_create(name="q", capability={"cpu": 4, "memory": "1G"}, deserved=None)
    assert (queue.capability, queue.deserved) == ({"cpu": 4000.0, "memory": 1e9}, None)
    job = services.job_submit(namespace="ns", name="j", queue="q", min_resources={"cpu": "1.5"},
                              tasks=[{"name": "t", "request": {"cpu": "250m", "pods": 1}}])
    assert job.min_resources == {"cpu": 1500.0}
    assert job.tasks.get().request == {"cpu": 250.0}


def test_queue_update_moves_and_sets_acl(cluster, django_user_model):
    user = django_user_model.objects.create_user("alice")
    other = services.queue_create(name="other")
    moved = services.queue_update(queue=cluster["mid"], parent=other, weight=4, admin_users=[user])
    assert (moved.parent.name, moved.weight, list(moved.admin_users.all())) == ("other", 4, [user])
    top_level = services.queue_update(queue=moved, parent="root")
    assert top_level.parent is None


def test_queue_close_is_closing_while_jobs_run(cluster):
    assert services.queue_set_state(queue=cluster["leaf"], state="Closed").state == "Closing"
    assert services.queue_set_state(queue=cluster["mid"], state="Closed").state == "Closed"
    assert services.queue_set_state(queue=cluster["leaf"], state="Open").state == "Open"


def test_job_cancel_releases_node_tasks_and_fails_waiting_ones(cluster):
    job = services.job_submit(namespace="ns1", name="j2", queue=cluster["leaf"], min_member=1, tasks=[
        task("a", status="Running", node="n1"), task("b")])
    cancelled = services.job_cancel(job=job)
    assert cancelled.phase == "Cancelled" and cancelled.finished is not None
    assert dict(job.tasks.values_list("name", "status")) == {"a": "Releasing", "b": "Failed"}
    assert services.job_cancel(job=cancelled).phase == "Cancelled"


def test_task_lifecycle_completes_the_job(cluster):
    finished = services.task_set_status(task=cluster["task"], status="Succeeded")
    assert finished.status == "Succeeded" and finished.finished is not None
    cluster["job"].refresh_from_db()
    assert cluster["job"].phase == "Completed"
    with pytest.raises(ValidationError) as caught:
        services.job_cancel(job=cluster["job"])
    assert caught.value.message_dict == {"phase": ["Job ns1/j1 has already completed."]}


def test_node_delete_keeps_finished_tasks(cluster):
    services.task_set_status(task=cluster["task"], status="Failed")
    services.node_delete(node=cluster["node"])
    assert not Node.objects.exists()
    assert Task.objects.get(pk=cluster["task"].pk).node is None


def test_scheduler_config_versions_keep_one_active(db, django_user_model):
    user = django_user_model.objects.create_user("ops")
    first = services.scheduler_config_activate(yaml=CONF, comment="one", created_by=user)
    second = services.scheduler_config_activate(yaml=CONF, comment="two")
    versions = [(c.version, c.active) for c in SchedulerConfig.objects.order_by("version")]
    assert versions == [(1, False), (2, True)]
    assert (first.created_by, second.comment) == (user, "two")


def test_namespace_quota_set_replaces_and_removes(db):
    services.namespace_quota_set(namespace="ns1", hard={"cpu": "10"})
    services.namespace_quota_set(namespace="ns1", hard={"memory": "1Gi"})
    assert NamespaceQuota.objects.get().hard == {"memory": float(GI)}
    assert services.namespace_quota_set(namespace="ns1", hard=None) is None
    assert not NamespaceQuota.objects.exists()


def test_cancel_many_is_job_cancel_for_each(cluster):
    from schedweb.audit.models import AuditEntry
    from schedweb.core.job_services import job_cancel_many

    leaf = cluster["leaf"]
    waiting = services.job_submit(namespace="ns1", name="w", queue=leaf, tasks=[task("a"), task("b")])
    done = services.job_submit(namespace="ns1", name="d", queue=leaf, tasks=[task()], phase="Completed")
    gone = services.job_cancel(job=services.job_submit(namespace="ns1", name="g", queue=cluster["leaf"],
                                                       tasks=[task()]))
    before = AuditEntry.objects.filter(action="cancel").count()
    out = job_cancel_many(job_ids=[cluster["job"].pk, waiting.pk, done.pk, gone.pk, 999999])
    assert sorted(out) == sorted([cluster["job"].pk, waiting.pk, done.pk, gone.pk])
    assert out[done.pk].message_dict == {"phase": ["Job ns1/d has already completed."]}
    assert [out[pk].phase for pk in (cluster["job"].pk, waiting.pk, gone.pk)] == ["Cancelled"] * 3
    assert sorted(Task.objects.filter(job__in=[cluster["job"], waiting]).values_list("name", "status")) == [
        ("a", "Failed"), ("b", "Failed"), ("j1-0", "Releasing")]
    assert AuditEntry.objects.filter(action="cancel").count() == before + 2  # the cancelled one: no entry


def test_submit_writes_a_job_and_its_tasks_in_one_statement(cluster, django_assert_num_queries):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the one-statement insert is PostgreSQL's")
    # One read (queues, classes, names), a savepoint pair (the test's transaction), the queue's
    # FOR SHARE lock (schedweb.core.queue_locks), one insert (its leaf guard included).
    with django_assert_num_queries(5):
        job = services.job_submit(namespace="ns1", name="one", queue="leaf",
                                  tasks=[task("w", replicas=3), task("chief")], min_member=4)
    assert sorted(Task.objects.filter(job=job).values_list("name", "role")) == [
        ("chief", ""), ("one-w-0", "w"), ("one-w-1", "w"), ("one-w-2", "w")]

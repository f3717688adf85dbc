"""Every write service of the cluster settings leaves exactly one audit entry with its diff."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from schedweb.audit.models import AuditEntry
from schedweb.core import services

CONF_V1 = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"
CONF_V2 = "actions: enqueue, allocate, backfill\ntiers:\n- plugins:\n  - name: gang\n"


def entries() -> list[tuple[str, str, str, str]]:
    """(actor, action, object_type, object_key) of every entry, oldest first."""
    return list(AuditEntry.objects.order_by("id").values_list("actor_name", "action", "object_type",
                                                               "object_key"))


def last() -> AuditEntry:
    return AuditEntry.objects.order_by("-id").first()


@pytest.mark.django_db
def test_queue_lifecycle_records_create_update_state_delete_with_diffs(make_user):
    alice = make_user("alice")
    parent = services.queue_create(name="team", actor=alice)
    queue = services.queue_create(name="q1", parent=parent, capability={"cpu": "4"}, actor=alice)
    created = last()
    assert created.before is None and created.after["capability"] == {"cpu": 4000.0}
    assert created.diff["parent"] == {"before": None, "after": "team"}
    assert created.queue_id == queue.pk and created.parent_queue_id == parent.pk

    services.queue_update(queue=queue, weight=3, admin_users=[alice], actor=alice)
    assert last().diff == {"admin_users": {"before": [], "after": ["alice"]},
                           "weight": {"before": 1, "after": 3}}
    services.queue_set_state(queue=queue, state="Closed", actor=alice)
    assert last().diff == {"state": {"before": "Open", "after": "Closed"}}
    services.queue_delete(queue=queue, actor=alice)
    deleted = last()
    assert deleted.after is None and deleted.before["name"] == "q1" and deleted.parent_queue_id == parent.pk
    assert entries() == [("alice", "create", "queue", "team"), ("alice", "create", "queue", "q1"),
                         ("alice", "update", "queue", "q1"), ("alice", "set_state", "queue", "q1"),
                         ("alice", "delete", "queue", "q1")]


@pytest.mark.django_db
def test_unchanged_update_records_nothing_and_refused_change_records_nothing():
    queue = services.queue_create(name="q1", weight=2)
    services.queue_update(queue=queue, weight=2)
    with pytest.raises(ValidationError):
        services.queue_update(queue=queue, weight=0)
    with pytest.raises(ValidationError):
        services.node_create(name="n1", allocatable={"cpu": "lots"})
    assert entries() == [("system", "create", "queue", "q1")]


@pytest.mark.django_db
def test_node_changes_are_recorded_but_heartbeats_are_not():
    node = services.node_create(name="n1", allocatable={"cpu": "8", "memory": "1Gi"})
    services.node_heartbeat(node=node, usage_cpu=50, usage_memory=20)
    services.node_update(node=node, unschedulable=True, labels={"zone": "a"})
    assert last().diff == {"labels": {"before": {}, "after": {"zone": "a"}},
                           "unschedulable": {"before": False, "after": True}}
    services.node_delete(node=node)
    assert entries() == [("system", "create", "node", "n1"), ("system", "update", "node", "n1"),
                         ("system", "delete", "node", "n1")]
    assert last().before["allocatable"] == {"cpu": 8000.0, "memory": 1073741824.0, "pods": 110}


@pytest.mark.django_db
def test_priority_class_and_quota_changes(make_user):
    bob = make_user("bob", staff=True)
    pc = services.priority_class_create(name="high", value=100, actor=bob)
    services.priority_class_update(priority_class=pc, value=200, actor=bob)
    assert last().diff == {"value": {"before": 100, "after": 200}}
    services.priority_class_delete(priority_class=pc, actor=bob)
    services.namespace_quota_set(namespace="ns1", hard={"cpu": "2"}, actor=bob)
    services.namespace_quota_set(namespace="ns1", hard={"cpu": "3"}, actor=bob)
    assert last().diff == {"hard": {"before": {"cpu": 2000.0}, "after": {"cpu": 3000.0}}}
    services.namespace_quota_set(namespace="ns1", hard=None, actor=bob)
    services.namespace_quota_set(namespace="ns2", hard=None, actor=bob)  # nothing there: no entry
    assert entries() == [
        ("bob", "create", "priority_class", "high"), ("bob", "update", "priority_class", "high"),
        ("bob", "delete", "priority_class", "high"), ("bob", "create", "namespace_quota", "ns1"),
        ("bob", "update", "namespace_quota", "ns1"), ("bob", "delete", "namespace_quota", "ns1"),
    ]


@pytest.mark.django_db
def test_scheduler_config_activation_diffs_against_previous_version(make_user):
    carol = make_user("carol", staff=True)
    services.scheduler_config_activate(yaml=CONF_V1)
    services.scheduler_config_activate(yaml=CONF_V2, comment="backfill", created_by=carol)
    entry = last()
    assert (entry.actor_name, entry.action, entry.object_key) == ("carol", "activate", "v2")
    assert entry.diff == {"comment": {"before": "", "after": "backfill"},
                          "version": {"before": 1, "after": 2},
                          "yaml": {"before": CONF_V1, "after": CONF_V2}}
    assert entries()[0] == ("system", "activate", "scheduler_config", "v1")


@pytest.mark.django_db
def test_job_cancel_is_recorded_against_its_queue(make_user):
    dave = make_user("dave")
    queue = services.queue_create(name="q1")
    job = services.job_submit(namespace="ns1", name="j1", queue=queue,
                              tasks=[{"name": "t0", "request": {"cpu": "1"}}])
    assert AuditEntry.objects.filter(object_type="job").count() == 0  # submissions are not audited
    services.job_cancel(job=job, actor=dave)
    entry = last()
    assert (entry.actor_name, entry.action, entry.object_key, entry.queue_id) == ("dave", "cancel", "ns1/j1",
                                                                                  queue.pk)
    assert entry.diff == {"phase": {"before": "Pending", "after": "Cancelled"}}

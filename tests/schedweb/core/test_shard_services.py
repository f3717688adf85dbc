"""NodeShard services: field checks naming the field, one shard per node, the version check, the
derived to add / to remove lists, the audit entries and the row lock."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import NodeShard
from schedweb.core.queue_services import StaleVersion


def shard(name: str = "s1", scheduler_name: str = "sched-1", **kw) -> NodeShard:
    """A shard through the create service."""
    return services.node_shard_create(name=name, scheduler_name=scheduler_name, **kw)


BAD = [
    ({"name": "Bad_Name"}, "name", "Name"),
    ({"scheduler_name": ""}, "scheduler_name", "required"),
    ({"scheduler_name": "Sched!"}, "scheduler_name", "Name"),
    ({"mode": "medium"}, "mode", "'medium' is not one of hard, soft"),
    ({"cpu_utilization_min": -0.1}, "cpu_utilization_min", "from 0 to 1"),
    ({"cpu_utilization_max": 1.5}, "cpu_utilization_max", "from 0 to 1"),
    ({"cpu_utilization_max": True}, "cpu_utilization_max", "from 0 to 1"),
    ({"cpu_utilization_min": 0.8, "cpu_utilization_max": 0.5}, "cpu_utilization_min", "is above"),
    ({"min_nodes": 3, "max_nodes": 2}, "min_nodes", "min_nodes (3) is above max_nodes (2)"),
    ({"min_nodes": -1}, "min_nodes", "at least 0"),
    ({"max_nodes": "2"}, "max_nodes", "whole number"),
    ({"nodes_desired": "n1"}, "nodes_desired", "list of names"),
    ({"nodes_desired": ["n1", "N2"]}, "nodes_desired[1]", "Name"),
    ({"nodes_desired": ["n1", "n1"]}, "nodes_desired[1]", "Duplicate name 'n1'"),
]


@pytest.mark.parametrize(("kwargs", "field", "message"), BAD)
def test_create_refuses_bad_fields_and_saves_nothing(db, kwargs, field, message):
    args = {"name": "s1", "scheduler_name": "sched-1", **kwargs}
    with pytest.raises(ValidationError) as info:
        services.node_shard_create(**args)
    assert list(info.value.message_dict) == [field]
    assert message in info.value.message_dict[field][0]
    assert not NodeShard.objects.exists() and not AuditEntry.objects.exists()


def test_names_and_scheduler_names_are_unique(db):
    shard()
    with pytest.raises(ValidationError) as info:
        shard(name="s1", scheduler_name="other")
    assert info.value.message_dict == {"name": ["A NodeShard named 's1' already exists."]}
    with pytest.raises(ValidationError) as info:
        shard(name="s2", scheduler_name="sched-1")
    assert info.value.message_dict == {"scheduler_name": ["NodeShard 's1' already has scheduler 'sched-1'."]}


def test_a_node_is_desired_by_one_shard(db):
    shard(nodes_desired=["n1", "n2"])
    with pytest.raises(ValidationError) as info:
        shard(name="s2", scheduler_name="sched-2", nodes_desired=["n3", "n2"])
    assert info.value.message_dict == {"nodes_desired": [
        "Node 'n2' is already desired by NodeShard 's1'; a node belongs to one shard at a time."]}
    other = shard(name="s2", scheduler_name="sched-2")
    with pytest.raises(ValidationError, match="already desired by NodeShard 's1'"):
        services.node_shard_set_desired(shard=other, nodes=["n1"])
    with pytest.raises(ValidationError, match="already desired by NodeShard 's1'"):
        services.node_shard_update(shard=other, nodes_desired=["n2"])
    assert NodeShard.objects.get(name="s2").nodes_desired == []


def test_set_desired_derives_to_add_and_to_remove(db):
    s = shard(nodes_desired=["n1"])
    assert (s.nodes_to_add, s.nodes_to_remove) == (["n1"], [])
    s = services.node_shard_set_in_use(shard=s, nodes=["n1", "n2"])
    assert (s.nodes_in_use, s.nodes_to_add, s.nodes_to_remove, s.version) == (["n1", "n2"], [], ["n2"], 1)
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    s = services.node_shard_set_desired(shard=s, nodes=["n3", "n1"], now=when)
    s.refresh_from_db()
    assert (s.nodes_desired, s.nodes_to_add, s.nodes_to_remove) == (["n3", "n1"], ["n3"], ["n2"])
    assert (s.last_update_time, s.version) == (when, 2)


def test_update_checks_the_version_and_keeps_other_fields(db):
    s = shard(cpu_utilization_max=0.5)
    services.node_shard_set_desired(shard=s, nodes=["n1"])  # the controller's write: version 2
    with pytest.raises(StaleVersion) as info:
        services.node_shard_update(shard=s, mode="soft", expected_version=1)
    assert "version 1, now 2" in info.value.message_dict["version"][0]
    s = services.node_shard_update(shard=s, mode="soft", expected_version=2)
    assert (s.mode, s.nodes_desired, s.cpu_utilization_max, s.version) == ("soft", ["n1"], 0.5, 3)
    with pytest.raises(ValidationError, match="is above"):
        services.node_shard_update(shard=s, cpu_utilization_min=0.6)
    with pytest.raises(StaleVersion):
        services.node_shard_delete(shard=s, expected_version=2)
    services.node_shard_delete(shard=s, expected_version=3)
    assert not NodeShard.objects.exists()


def test_writes_are_audited(db):
    s = shard()
    services.node_shard_set_desired(shard=s, nodes=["n1"])
    services.node_shard_delete(shard=s)
    entries = list(AuditEntry.objects.order_by("id").values_list("action", "object_type", "object_key"))
    assert entries == [("create", "node_shard", "s1"), ("update", "node_shard", "s1"),
                       ("delete", "node_shard", "s1")]
    update = AuditEntry.objects.get(action="update")
    assert update.before["nodes_desired"] == [] and update.after["nodes_desired"] == ["n1"]
    assert update.after["nodes_to_add"] == ["n1"]


def test_every_write_reads_the_rows_again_under_a_lock(db):
    """The controller's and a user's writes each lock the shard rows before reading them, so
    neither saves fields the other changed meanwhile (the lock, not the caller's copy, decides)."""
    from django.test.utils import CaptureQueriesContext

    s = shard()
    stale = NodeShard.objects.get(pk=s.pk)
    services.node_shard_set_desired(shard=s, nodes=["n1"])
    with CaptureQueriesContext(connection) as queries:
        services.node_shard_update(shard=stale, mode="soft")  # an old copy: desired stays
    assert "FOR UPDATE" in queries.captured_queries[0]["sql"] or \
        "FOR UPDATE" in queries.captured_queries[1]["sql"]
    s.refresh_from_db()
    assert (s.mode, s.nodes_desired, s.version) == ("soft", ["n1"], 3)

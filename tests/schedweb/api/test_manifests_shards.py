"""NodeShard manifests (shard.volcano.sh/v1alpha1): exported with the schedweb.io annotations,
imported as create / update / unchanged with diffs and dry runs; the status is never imported."""

from __future__ import annotations

import pytest
import yaml

from schedweb.core import services
from schedweb.core.models import NodeShard

pytestmark = pytest.mark.django_db

DOC = """\
apiVersion: shard.volcano.sh/v1alpha1
kind: NodeShard
metadata:
  name: shard-a
  annotations:
    schedweb.io/scheduler-name: sched-a
    schedweb.io/shard-mode: soft
    schedweb.io/max-nodes: "3"
    schedweb.io/cpu-utilization-max: "0.75"
spec:
  nodesDesired: [n1, n2]
status:
  nodesInUse: [n9]
  nodesToAdd: [n1, n2]
  nodesToRemove: [n9]
  lastUpdateTime: "2026-01-01T00:00:00Z"
"""


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def _apply(client, text: str, dry_run: bool = False):
    return client.generic("POST", "/api/v1/manifests/import/" + ("?dry_run=true" if dry_run else ""), text,
                          content_type="application/yaml")


def test_import_creates_without_the_status_and_export_writes_it(staff):
    response = _apply(staff, DOC)
    assert response.status_code == 200, response.json()
    change = response.json()["changes"][0]
    assert (change["kind"], change["action"], change["url"]) == ("NodeShard", "created",
                                                                  "/api/v1/nodeshards/shard-a/")
    shard = NodeShard.objects.get()
    assert (shard.scheduler_name, shard.mode, shard.max_nodes, shard.min_nodes) == ("sched-a", "soft", 3, 0)
    assert (shard.cpu_utilization_min, shard.cpu_utilization_max) == (0.0, 0.75)
    assert (shard.nodes_desired, shard.nodes_in_use, shard.nodes_to_add) == (["n1", "n2"], [], ["n1", "n2"])
    docs = list(yaml.safe_load_all(staff.get("/api/v1/manifests/export/").content))
    [doc] = [d for d in docs if d["kind"] == "NodeShard"]  # in the default kinds
    assert doc["metadata"]["annotations"] == {
        "schedweb.io/scheduler-name": "sched-a", "schedweb.io/shard-mode": "soft",
        "schedweb.io/min-nodes": "0", "schedweb.io/max-nodes": "3",
        "schedweb.io/cpu-utilization-min": "0", "schedweb.io/cpu-utilization-max": "0.75"}
    assert doc["status"]["nodesInUse"] == [] and doc["status"]["nodesToAdd"] == ["n1", "n2"]
    assert doc["status"]["lastUpdateTime"].endswith("Z")


def test_reimport_dry_run_diff_then_update(staff):
    _apply(staff, DOC)
    changed = DOC.replace("nodesDesired: [n1, n2]", "nodesDesired: [n1, n3]")
    dry = _apply(staff, changed, dry_run=True).json()
    assert dry["node_shards_updated"] == ["shard-a"]
    assert dry["changes"][0]["diff"] == {"documents[0].spec.nodesDesired[1]": {"from": "n2", "to": "n3"}}
    assert NodeShard.objects.get().nodes_desired == ["n1", "n2"]
    assert _apply(staff, changed).json()["node_shards_updated"] == ["shard-a"]
    assert NodeShard.objects.get().nodes_desired == ["n1", "n3"]
    # Only the status differs from what is stored: nothing to change.
    assert _apply(staff, changed.replace("nodesInUse: [n9]", "nodesInUse: []")).json()[
        "node_shards_unchanged"] == ["shard-a"]


def test_no_annotation_means_the_shard_name_as_scheduler(staff):
    text = "apiVersion: shard.volcano.sh/v1alpha1\nkind: NodeShard\nmetadata: {name: plain}\nspec: {}\n"
    assert _apply(staff, text).status_code == 200
    shard = NodeShard.objects.get()
    assert (shard.scheduler_name, shard.mode, shard.nodes_desired) == ("plain", "hard", [])


@pytest.mark.parametrize(("edit", "path"), [
    (("schedweb.io/max-nodes: \"3\"", "schedweb.io/max-nodes: three"),
     "documents[0].metadata.annotations.schedweb.io/max-nodes"),
    (("schedweb.io/shard-mode: soft", "schedweb.io/shard-mode: medium"),
     "documents[0].metadata.annotations.schedweb.io/shard-mode"),
    (("schedweb.io/shard-mode: soft", "schedweb.io/shard-mod: soft"),
     "documents[0].metadata.annotations.schedweb.io/shard-mod"),
    (("nodesDesired: [n1, n2]", "nodesDesired: [n1, n1]"), "documents[0].spec.nodesDesired[1]"),
    (("nodesDesired: [n1, n2]", "nodesWanted: [n1]"), "documents[0].spec.nodesWanted"),
    (("cpu-utilization-max: \"0.75\"", "cpu-utilization-max: \"nan\""),
     "documents[0].metadata.annotations.schedweb.io/cpu-utilization-max"),
])
def test_bad_documents_are_400_by_manifest_path(staff, edit, path):
    response = _apply(staff, DOC.replace(*edit))
    assert response.status_code == 400, response.json()
    assert path in response.json()["error"]["fields"], response.json()
    assert not NodeShard.objects.exists()


def test_a_node_of_another_shard_is_refused_and_users_may_not_change_shards(staff, make_user, client_for):
    services.node_shard_create(name="other", scheduler_name="sched-o", nodes_desired=["n2"])
    response = _apply(staff, DOC)
    assert response.status_code == 400
    assert "already desired by NodeShard 'other'" in response.json()["error"]["fields"][
        "documents[0].spec.nodesDesired"][0]
    user = client_for(make_user("u"))
    assert _apply(user, DOC.replace("[n1, n2]", "[n1]")).status_code == 403


def test_a_node_moved_between_two_shards_of_one_manifest_is_let_go_first(staff):
    services.node_shard_create(name="a", scheduler_name="sched-a", nodes_desired=["n1"])
    services.node_shard_create(name="b", scheduler_name="sched-b", nodes_desired=["n2"])
    text = ("apiVersion: shard.volcano.sh/v1alpha1\nkind: NodeShard\nmetadata:\n  name: a\n  annotations:\n"
            "    schedweb.io/scheduler-name: sched-a\nspec: {nodesDesired: [n1, n2]}\n---\n"
            "apiVersion: shard.volcano.sh/v1alpha1\nkind: NodeShard\nmetadata:\n  name: b\n  annotations:\n"
            "    schedweb.io/scheduler-name: sched-b\nspec: {nodesDesired: []}\n")
    response = _apply(staff, text)  # a takes n2, which b (the later document) lets go
    assert response.status_code == 200, response.json()
    assert [c["name"] for c in response.json()["changes"]] == ["b", "a"]
    assert dict(NodeShard.objects.values_list("name", "nodes_desired")) == {"a": ["n1", "n2"], "b": []}

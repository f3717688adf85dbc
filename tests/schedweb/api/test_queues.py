"""Queue endpoints: CRUD by name, validation errors naming the field, tree with figures, open/close."""

from __future__ import annotations

import pytest

from schedweb.core.models import Job, Task

from .conftest import make_job, make_queue

GI = 2**30


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("root-admin", staff=True))


def test_create_read_update_delete(staff):
    created = staff.post("/api/v1/queues/", {"name": "ml", "weight": 2,
                                             "capability": {"cpu": "10", "memory": "4Gi"},
                                             "admins": {"users": ["root-admin"]}}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert {k: body[k] for k in ("name", "parent", "weight", "state", "reclaimable", "capability", "deserved",
                                 "guarantee", "admins", "submitters")} == {
        "name": "ml", "parent": None, "weight": 2, "state": "Open", "reclaimable": True,
        "capability": {"cpu": 10, "memory": 4 * GI}, "deserved": None, "guarantee": None,
        "admins": {"users": ["root-admin"], "groups": []}, "submitters": {"users": [], "groups": []},
    }
    top = staff.post("/api/v1/queues/", {"name": "ml-infer", "parent": "root"}, format="json")
    assert top.status_code == 201 and top.json()["parent"] is None
    child = staff.post("/api/v1/queues/", {"name": "ml-train", "parent": "ml"}, format="json")
    assert child.status_code == 201 and child.json()["parent"] == "ml"
    assert staff.patch("/api/v1/queues/ml-train/", {"weight": 5}, format="json").json()["weight"] == 5
    listed = staff.get("/api/v1/queues/?parent=ml").json()
    assert listed["count"] == 1 and [q["name"] for q in listed["results"]] == ["ml-train"]
    assert staff.delete("/api/v1/queues/ml-train/").status_code == 204
    assert staff.get("/api/v1/queues/ml-train/").status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "q", "weight": 0}, "weight"),
    ({"name": "q", "parent": "ghost"}, "parent"),
    ({"name": "q", "capability": {"cpu": "12x"}}, "capability"),
    ({"name": "q", "capability": "lots"}, "capability"),
    ({"name": "q", "colour": "red"}, "colour"),
    ({"name": "root"}, "name"),
    ({"weight": 2}, "name"),
])
def test_create_rejects_bad_input_naming_the_field(staff, body, field):
    response = staff.post("/api/v1/queues/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


def test_duplicate_name_and_cycle_are_400(staff):
    top = make_queue("top")
    make_queue("mid", top)
    duplicate = staff.post("/api/v1/queues/", {"name": "mid", "parent": "top"}, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()["error"]["fields"]
    cycle = staff.patch("/api/v1/queues/top/", {"parent": "mid"}, format="json")
    assert cycle.status_code == 400 and "parent" in cycle.json()["error"]["fields"]


def test_open_and_close(staff):
    make_queue("q")
    closed = staff.post("/api/v1/queues/q/close/")
    assert closed.status_code == 200 and closed.json()["state"] in ("Closed", "Closing")
    assert staff.post("/api/v1/queues/q/open/").json()["state"] == "Open"


def test_tree_has_hierarchy_and_figures(staff):
    team_a = make_queue("team-a", capability={"cpu": "20"}, guarantee={"cpu": "2"})
    a1 = make_queue("a1", team_a)
    make_queue("team-b")
    running = make_job(a1, "run", tasks=2, cpu="1", memory="1Gi")
    Job.objects.filter(pk=running.pk).update(phase="Running")
    Task.objects.filter(job=running).update(status="Running")
    make_job(a1, "wait", tasks=3, cpu="2", memory="1Gi")
    tree = staff.get("/api/v1/queues/tree/").json()
    assert tree["name"] == "root"
    assert [q["name"] for q in tree["children"]] == ["default", "team-a", "team-b"]
    team_a_node = tree["children"][1]
    assert [c["name"] for c in team_a_node["children"]] == ["a1"]
    leaf = team_a_node["children"][0]["figures"]
    assert leaf == {"deserved": None, "allocated": {"cpu": 2, "memory": 2 * GI},
                    "request": {"cpu": 8, "memory": 5 * GI}, "guarantee": None, "capability": None,
                    "real_capability": None, "share": None, "pending_jobs": 1}
    parent = team_a_node["figures"]
    assert parent["allocated"] == {"cpu": 2, "memory": 2 * GI}
    assert parent["capability"] == {"cpu": 20} and parent["guarantee"] == {"cpu": 2}
    assert parent["pending_jobs"] == 1
    assert tree["children"][2]["figures"]["allocated"] == {}


def test_tree_carries_the_latest_cycle_figures(make_user, client_for):
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.models import QueueSample

    from .conftest import job_body, make_node

    team = make_queue("team")
    make_queue("leaf", team)
    make_node("n1", cpu="8", memory="32Gi")
    client = client_for(make_user("reader", staff=True))
    assert client.post("/api/v1/jobs/", job_body("leaf", tasks=2), format="json").status_code == 201
    before = client.get("/api/v1/queues/tree/").json()
    leaf_before = before["children"][1]["children"][0]
    assert leaf_before["name"] == "leaf"
    assert (leaf_before["figures"]["deserved"], leaf_before["figures"]["share"]) == (None, None)
    cycle_run()
    sample = QueueSample.objects.get(queue="leaf")
    leaf = client.get("/api/v1/queues/tree/").json()["children"][1]["children"][0]["figures"]
    # Hierarchical capacity (the shipped default): a queue without `deserved` deserves nothing
    # and runs on its capability (the cluster); the tree shows the cycle's own figures.
    assert leaf["deserved"] == {"cpu": 0, "memory": 0}
    assert sample.deserved == {"cpu": 0.0, "memory": 0.0}
    assert leaf["allocated"] == {"cpu": 2, "memory": 2 * GI}
    assert leaf["share"] == sample.share

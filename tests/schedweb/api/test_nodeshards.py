"""/api/v1/nodeshards/: staff write, signed-in users read, ETag / If-Match, clear 400s; and the
job API's scheduler_name (create, batch, list, detail, filter)."""

from __future__ import annotations

import pytest

from schedweb.core import services
from schedweb.core.models import Job, NodeShard

from .conftest import job_body, make_queue

pytestmark = pytest.mark.django_db

BODY = {"name": "shard-a", "scheduler_name": "sched-a", "mode": "soft", "nodes_desired": ["n1", "n2"],
        "min_nodes": 1, "max_nodes": 4, "cpu_utilization_min": 0.2, "cpu_utilization_max": 0.8}


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def test_staff_create_and_everyone_reads(staff, make_user, client_for):
    response = staff.post("/api/v1/nodeshards/", BODY, format="json")
    assert response.status_code == 201, response.json()
    assert response["Location"] == "/api/v1/nodeshards/shard-a/"
    shard = NodeShard.objects.get()
    assert response["ETag"] == f'"{shard.pk}-1"'
    body = response.json()
    assert {k: body[k] for k in BODY} == BODY
    assert (body["nodes_in_use"], body["nodes_to_add"], body["nodes_to_remove"]) == ([], ["n1", "n2"], [])
    user = client_for(make_user("u"))
    listed = user.get("/api/v1/nodeshards/").json()
    assert [item["name"] for item in listed["results"]] == ["shard-a"]
    assert user.get("/api/v1/nodeshards/shard-a/").json()["scheduler_name"] == "sched-a"
    assert user.get("/api/v1/nodeshards/?scheduler_name=other").json()["results"] == []
    assert user.post("/api/v1/nodeshards/", {**BODY, "name": "b"}, format="json").status_code == 403
    assert user.patch("/api/v1/nodeshards/shard-a/", {"mode": "hard"}, format="json").status_code == 403
    assert user.delete("/api/v1/nodeshards/shard-a/").status_code == 403
    assert client_for(None).get("/api/v1/nodeshards/").status_code == 401


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "Bad"}, "name"), ({"scheduler_name": "Bad Sched"}, "scheduler_name"),
    ({"mode": "x"}, "mode"), ({"cpu_utilization_max": 2}, "cpu_utilization_max"),
    ({"cpu_utilization_min": 0.9}, "cpu_utilization_min"), ({"min_nodes": 5}, "min_nodes"),
    ({"nodes_desired": ["n1", "n1"]}, "nodes_desired[1]"), ({"nodes_desired": "n1"}, "nodes_desired"),
    ({"nodes_in_use": ["n1"]}, "nodes_in_use"), ({"extra": 1}, "extra"),
])
def test_bad_bodies_are_400_naming_the_field(staff, body, field):
    response = staff.post("/api/v1/nodeshards/", {**BODY, **body}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"], response.json()
    assert not NodeShard.objects.exists()


def test_patch_with_if_match_and_the_other_shards_nodes(staff):
    staff.post("/api/v1/nodeshards/", BODY, format="json")
    shard = NodeShard.objects.get()
    services.node_shard_set_desired(shard=shard, nodes=["n1"])  # the controller: version 2
    stale = staff.patch("/api/v1/nodeshards/shard-a/", {"mode": "hard"}, format="json",
                        HTTP_IF_MATCH=f'"{shard.pk}-1"')
    assert stale.status_code == 412
    ok = staff.patch("/api/v1/nodeshards/shard-a/", {"mode": "hard"}, format="json",
                     HTTP_IF_MATCH=f'"{shard.pk}-2"')
    assert (ok.status_code, ok["ETag"], ok.json()["mode"], ok.json()["nodes_desired"]) == (
        200, f'"{shard.pk}-3"', "hard", ["n1"])
    staff.post("/api/v1/nodeshards/", {**BODY, "name": "shard-b", "scheduler_name": "sched-b",
                                       "nodes_desired": []}, format="json")
    clash = staff.patch("/api/v1/nodeshards/shard-b/", {"nodes_desired": ["n1"]}, format="json")
    assert clash.status_code == 400
    assert "already desired by NodeShard 'shard-a'" in clash.json()["error"]["fields"]["nodes_desired"][0]
    assert staff.delete("/api/v1/nodeshards/shard-b/", HTTP_IF_MATCH='"0-1"').status_code == 412
    assert staff.delete("/api/v1/nodeshards/shard-b/").status_code == 204
    assert staff.get("/api/v1/nodeshards/shard-b/").status_code == 404


def test_jobs_carry_their_scheduler_name(staff):
    make_queue("q")
    created = staff.post("/api/v1/jobs/", job_body("q", "a", scheduler_name="sched-a"), format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["scheduler_name"] == "sched-a"
    default = staff.post("/api/v1/jobs/", job_body("q", "b"), format="json").json()
    assert default["scheduler_name"] == "volcano"
    bad = staff.post("/api/v1/jobs/", job_body("q", "c", scheduler_name="Not A Name"), format="json")
    assert bad.status_code == 400 and "scheduler_name" in bad.json()["error"]["fields"]
    batch = staff.post("/api/v1/jobs/batch/", {"jobs": [job_body("q", "d", scheduler_name="sched-b")]},
                       format="json")
    assert batch.status_code in (200, 201, 207), batch.json()
    assert Job.objects.get(name="d").scheduler_name == "sched-b"
    listed = staff.get("/api/v1/jobs/?scheduler_name=sched-a").json()["results"]
    assert [(j["name"], j["scheduler_name"]) for j in listed] == [("a", "sched-a")]
    detail = staff.get(f"/api/v1/jobs/{created.json()['id']}/").json()
    assert detail["scheduler_name"] == "sched-a"

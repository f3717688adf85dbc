"""The shards pages: the list, a shard's page (nodes linked, policy, the staff edit form with the
version check), the node page's shard line and the job page's scheduler name."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from schedweb.core import services
from schedweb.core.models import NodeShard

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(client_as):
    users = get_user_model().objects
    staff, viewer = users.create_user("staff", is_staff=True), users.create_user("viewer")
    for name in ("n1", "n2"):
        services.node_create(name=name, allocatable={"cpu": "4", "memory": "8Gi"})
    shard = services.node_shard_create(name="shard-a", scheduler_name="sched-a", nodes_desired=["n1", "gone"],
                                       max_nodes=3, cpu_utilization_max=0.5)
    services.node_shard_set_in_use(shard=shard, nodes=["n2"])
    return {"staff": client_as(staff), "viewer": client_as(viewer), "shard": shard}


def test_list_shows_counts_and_links(world):
    html = world["viewer"].get("/shards/").content.decode()
    row = re.search(r'<tr data-shard="shard-a">(.*?)</tr>', html, re.S).group(1)
    assert '<a href="/shards/shard-a/">shard-a</a>' in row and "<code>sched-a</code>" in row
    assert re.findall(r'class="num">(\d+)</td>', row) == ["2", "1", "2", "1"]
    assert 'href="/shards/"' in html  # the nav link


def test_shard_page_links_its_nodes_and_hides_the_form_from_users(world):
    html = world["viewer"].get("/shards/shard-a/").content.decode()
    assert '<a href="/nodes/n1/">n1</a>' in html and '<a href="/nodes/n2/">n2</a>' in html
    assert "<code>gone</code> <span class=\"tag\">gone</span>" in html
    assert "0 to 3" in html and "0.00 to 0.50" in html
    assert "shard-edit-form" not in html
    assert world["viewer"].post("/shards/shard-a/edit/", {}).status_code == 403


def test_staff_edit_checks_the_version(world):
    staff = world["staff"]
    assert "shard-edit-form" in staff.get("/shards/shard-a/").content.decode()
    form = {"scheduler_name": "sched-a", "mode": "soft", "nodes_desired": "n1, n2", "min_nodes": 0,
            "max_nodes": "", "cpu_utilization_min": 0, "cpu_utilization_max": 0.5, "version": 1}
    services.node_shard_set_desired(shard=world["shard"], nodes=["n1"])  # the controller: version 2
    stale = staff.post("/shards/shard-a/edit/", form)
    assert stale.status_code == 400 and "changed by someone else" in stale.content.decode()
    ok = staff.post("/shards/shard-a/edit/", {**form, "version": 2})
    assert (ok.status_code, ok["Location"]) == (302, "/shards/shard-a/")
    shard = NodeShard.objects.get()
    assert (shard.mode, shard.nodes_desired, shard.max_nodes, shard.version) == (
        "soft", ["n1", "n2"], None, 3)
    bad = staff.post("/shards/shard-a/edit/", {**form, "version": 3, "cpu_utilization_min": 0.9})
    assert bad.status_code == 400 and "is above" in bad.content.decode()


def test_node_page_names_its_shards_and_job_page_its_scheduler(world):
    html = world["viewer"].get("/nodes/n1/").content.decode()
    line = re.search(r'<p class="muted" id="node-shards">(.*?)</p>', html, re.S).group(1)
    assert line == 'Shard: <a href="/shards/shard-a/">shard-a</a> (desired, not in use yet)'
    html = world["viewer"].get("/nodes/n2/").content.decode()
    line = re.search(r'id="node-shards">(.*?)</p>', html).group(1)
    assert line == 'Shard: <a href="/shards/shard-a/">shard-a</a> (in use, no longer desired)'
    services.queue_create(name="q")
    services.job_submit(namespace="ns", name="j", queue="q", scheduler_name="sched-a",
                        tasks=[{"name": "j-0", "request": {"cpu": "1"}}])
    html = world["viewer"].get("/jobs/ns/j/").content.decode()
    assert '<span id="job-scheduler">sched-a</span>' in html

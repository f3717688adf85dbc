"""Nodes page (table, heatmap, freshness) and "My queues"."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core import services
from schedweb.core.models import Node


def test_nodes_table_and_heatmap(cycled, client_as):
    node = Node.objects.get(name="cpu-01")
    services.node_heartbeat(node=node, usage_cpu=55.0, usage_memory=40.0)
    Node.objects.filter(name="cpu-02").update(usage_cpu=10.0, usage_memory=5.0,
                                              usage_updated=timezone.now() - timedelta(minutes=10))
    html = client_as(cycled["viewer"]).get("/nodes/").content.decode()
    rows = re.findall(r'<td id="node-([^"]+)"><strong><a href="/nodes/\1/">\1</a></strong>', html)
    assert len(rows) == 21 and rows[:2] == ["cpu-01", "cpu-02"]
    assert '>cpu-12</a></strong> <span class="tag">cordoned</span>' in html
    assert "<code>nvidia.com/gpu=present:NoSchedule</code>" in html
    assert 'cpu 55%, mem 40% <span class="fresh small">' in html
    assert 'cpu 10%, mem 5% <span class="stale small">10 min ago</span>' in html
    heat = json.loads(re.search(r'<script id="node-heatmap-data" type="application/json">(.*?)</script>',
                                html, re.S).group(1))
    trace = heat["data"][0]
    assert trace["y"] == ["CPU", "Memory", "GPU"]
    gpu_row = trace["z"][2]
    assert gpu_row[:12] == [None] * 12  # cpu nodes have no GPUs
    # 36 of 48 GPUs held: bert 4 x 4 + llm 2 x 8 + resnet 2 x 2 (detector-train's 8 would pass research's 40).
    assert sum(round(v / 100 * 8) for v in gpu_row[12:18]) == 36


@pytest.mark.parametrize(("user", "queues", "roles"), [
    ("lead", ["research", "nlp", "nlp-eval", "nlp-train", "vision"], {"admin"}),
    ("submitter", ["vision"], {"submitter"}),
])
def test_my_queues(cycled, client_as, user, queues, roles):
    html = client_as(cycled[user]).get("/mine/").content.decode()
    table = html[html.index('id="my-queues"'):html.index("Their pending jobs")]
    assert re.findall(r'<a href="/queues/([^/]+)/">', table) == queues
    assert set(re.findall(r"<td>(admin|submitter)</td>", table)) == roles
    jobs = re.findall(r'<tr data-job="([^"]+)"', html)
    # NeverFits first (gpt-giant, megabatch), then by queue: nlp-eval, vision.
    expected = {"lead": ["nlp/gpt-giant", "vision/megabatch", "nlp/tokenize-corpus", "nlp/elastic-hpo",
                         "vision/detector-train"],
                "submitter": ["vision/megabatch", "vision/detector-train"]}[user]
    assert jobs == expected


def test_my_queues_without_any_role(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/mine/").content.decode()
    assert "You do not administer or submit to any queue yet." in html
    assert 'id="my-queues"' not in html


def test_my_queues_for_staff_lists_every_queue(cycled, client_as):
    html = client_as(cycled["staff"]).get("/mine/").content.decode()
    assert "As staff you administer every queue." in html
    assert len(re.findall(r"<td>admin</td>", html)) == 12  # the 11 demo queues and "default"

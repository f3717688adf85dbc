"""Queue tree, queue page, chart JSON, and editing / opening / closing a queue."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedweb.core import services
from schedweb.core.models import Queue

TREE_ORDER = ["dev", "sandbox", "legacy", "production", "etl", "serving-batch", "research", "nlp",
              "nlp-eval", "nlp-train", "vision"]


def test_tree_lists_every_queue_in_preorder_with_flags(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/").content.decode()
    assert re.findall(r'<details class="q[^"]*" data-name="[^"]*" id="q-([^"]+)"', html) == TREE_ORDER
    # Nesting: each <details> closes after its subtree (11 opened, 11 closed).
    assert html.count("<details class=\"q") == html.count("</details>") == 11
    nlp_train = html[html.index('id="q-nlp-train"'):html.index('id="q-vision"')]
    assert "starving" in nlp_train and "borrowing</span>" not in nlp_train
    assert "64 / 384" in nlp_train and "32 GPUs / 36 GPUs" in nlp_train
    assert 'class="q leaf"' in html and 'id="tree-search"' in html


def _tree_queries(client) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/queues/").status_code == 200
    return len(ctx.captured_queries)


def test_tree_query_count_does_not_grow_with_the_tree(cycled, client_as):
    client = client_as(cycled["viewer"])
    before = _tree_queries(client)
    parent = services.queue_create(name="many")
    for i in range(60):
        child = services.queue_create(name=f"team-{i:02d}", parent=parent)
        services.queue_create(name=f"team-{i:02d}-batch", parent=child)
    assert _tree_queries(client) == before
    assert before <= 10


def test_queue_page_figures_children_and_explanation(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/research/").content.decode()
    assert re.findall(r'<td class="deserved-\d" data-dim="([^"]+)">([^<]+)</td>', html) == [
        ("cpu", "528"), ("memory", "6,329 GiB"), ("nvidia.com/gpu", "48 GPUs")]
    children = html[html.index('id="children"'):]
    assert re.findall(r'<a href="/queues/([^/]+)/">', children)[:2] == ["nlp", "vision"]
    assert "parent queues are explained when the hierarchical capacity plugin runs" in html


def test_leaf_queue_page_lists_jobs_and_explains_the_rounds(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/vision/").content.decode()
    jobs = re.findall(r'<a href="/jobs/vision/([^/]+)/">', html)
    assert jobs == ["resnet-train", "augment-preproc", "detector-train", "labeling-export", "megabatch",
                    "tf-dist"]  # unfinished jobs in submission order
    assert "Queue vision has weight 1 and asks for cpu 575, memory 505 GiB, GPU 12 GPUs." in html
    assert "Result: queue vision deserves cpu 96, memory 505 GiB, GPU 12 GPUs." in html
    assert "The rounds of the weighted computation" in html


def test_chart_json_current_bars_and_history(cycled, client_as):
    body = client_as(cycled["viewer"]).get("/queues/vision/chart.json?range=all").json()
    assert body["range"] == "all" and body["samples"] == 1
    assert sorted(body["figures"]) == [
        "chart-cpu-current", "chart-cpu-history", "chart-memory-current", "chart-memory-history",
        "chart-nvidia-com-gpu-current", "chart-nvidia-com-gpu-history"]
    cpu = body["figures"]["chart-cpu-current"]["data"][0]
    assert cpu["y"] == [63, 512, 96, None, 96]
    gpu = body["figures"]["chart-nvidia-com-gpu-current"]["data"][0]
    assert gpu["y"] == [12, 0, 12, None, 16]
    history = body["figures"]["chart-cpu-history"]["data"]
    assert [(t["name"], t["y"]) for t in history] == [("Deserved", [96]), ("Allocated", [63]),
                                                      ("Requested", [575])]


@pytest.mark.parametrize(("asked", "used"), [("15m", "15m"), ("24h", "24h"), ("bogus", "1h"), ("", "1h")])
def test_chart_range_selector(cycled, client_as, asked, used):
    body = client_as(cycled["viewer"]).get(f"/queues/vision/chart.json?range={asked}").json()
    assert body["range"] == used


def _edit(client, queue: str, **fields):
    data = {"weight": 1, "priority": 0, "reclaimable": "on", "capability": "", "deserved": "",
            "guarantee": ""}
    data.update(fields)
    return client.post(f"/queues/{queue}/edit/", data)


def test_admin_edits_a_queue_through_the_service(demo, client_as):
    client = client_as(demo["lead"])
    response = _edit(client, "vision", weight=3, priority=5,
                     capability=json.dumps({"cpu": "100", "nvidia.com/gpu": 16}))
    assert (response.status_code, response["Location"]) == (302, "/queues/vision/")
    vision = Queue.objects.get(name="vision")
    assert (vision.weight, vision.priority, vision.reclaimable) == (3, 5, True)
    assert vision.capability == {"cpu": 100000.0, "nvidia.com/gpu": 16000.0}
    assert vision.deserved is None and vision.guarantee is None
    assert "Queue vision saved" in client.get("/queues/vision/").content.decode()


@pytest.mark.parametrize(("fields", "message"), [
    ({"weight": 0}, "Must be at least 1, got 0."),
    ({"capability": '{"cpu": "lots"}'}, "lots"),
    ({"guarantee": "{"}, "Enter a valid JSON."),
    ({"weight": "x"}, "Enter a whole number."),
])
def test_invalid_edits_show_errors_and_save_nothing(demo, client_as, fields, message):
    response = _edit(client_as(demo["lead"]), "vision", **{"priority": 9, **fields})
    assert response.status_code == 400
    assert message in response.content.decode()
    vision = Queue.objects.get(name="vision")
    assert (vision.weight, vision.priority) == (1, 0)
    assert vision.capability == {"cpu": 96000.0, "nvidia.com/gpu": 16000.0}


def test_unchanged_form_round_trips(demo, client_as):
    before = Queue.objects.get(name="nlp")
    client = client_as(demo["lead"])
    html = client.get("/queues/nlp/").content.decode()
    fields = dict(re.findall(r'<textarea name="(\w+)"[^>]*>\s*([^<]*)</textarea>', html))
    data = {"weight": before.weight, "priority": before.priority, "reclaimable": "on",
            **{k: v.replace("&quot;", '"') for k, v in fields.items()}}
    assert client.post("/queues/nlp/edit/", data).status_code == 302
    after = Queue.objects.get(name="nlp")
    assert (after.deserved, after.guarantee, after.capability) == (before.deserved, before.guarantee, None)


@pytest.mark.parametrize(("state", "expected"), [("close", "Closing"), ("open", "Open"), ("bogus", "Open")])
def test_open_and_close(demo, client_as, state, expected):
    # vision has unfinished jobs: closing it makes it Closing until they finish (Volcano).
    response = client_as(demo["lead"]).post("/queues/vision/state/", {"state": state})
    assert (response.status_code, response["Location"]) == (302, "/queues/vision/")
    assert Queue.objects.get(name="vision").state == expected


def test_closing_an_idle_queue_closes_it(demo, client_as):
    services.queue_set_state(queue=Queue.objects.get(name="legacy"), state="Open")
    client_as(demo["staff"]).post("/queues/legacy/state/", {"state": "close"})
    assert Queue.objects.get(name="legacy").state == "Closed"
    assert 'id="open-queue"' in client_as(demo["staff"]).get("/queues/legacy/").content.decode()

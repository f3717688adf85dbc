"""Queue tree, queue page, chart JSON, and editing / opening / closing a queue.

Figures: the demo after one cycle under hierarchical capacity (see test_overview's docstring for
what each queue holds). vision asks 575 cores (resnet 16 + augment 12 + detector 16 + labeling 1 +
megabatch 4 x 128 + tf-dist 18) and holds 47 (detector-train is refused: research's GPUs), deserves
its configured 64 cores / 512 GiB / 16 GPUs, within its real capability (its capability: 96 cores,
16 GPUs; memory what research leaves, 1.5 TiB).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedweb.core import services
from schedweb.core.models import Queue
from schedweb.dashboard.charts import history_figure

TREE_ORDER = ["default", "dev", "sandbox", "legacy", "production", "etl", "serving-batch", "research", "nlp",
              "nlp-eval", "nlp-train", "vision"]


def test_tree_lists_every_queue_in_preorder_with_flags(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/").content.decode()
    assert re.findall(r'<details class="q[^"]*" data-name="[^"]*" id="q-([^"]+)"', html) == TREE_ORDER
    # Nesting: each <details> closes after its subtree (12 opened, 12 closed).
    assert html.count("<details class=\"q") == html.count("</details>") == 12
    nlp_train = html[html.index('id="q-nlp-train"'):html.index('id="q-vision"')]
    # 64 of its deserved 96 cores, 32 GPUs (bert 16 + llm 16) above its deserved 24: borrowing; its
    # waiting job (gpt-giant) can never run, which is not waiting for share: not starving.
    assert "borrowing</span>" in nlp_train and "starving" not in nlp_train
    assert "64 / 96 cores" in nlp_train and "32 / 24 GPUs" in nlp_train
    etl = html[html.index('id="q-etl"'):html.index('id="q-serving-batch"')]
    assert "starving</span>" in etl and "120 / 120 cores" in etl
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


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def _sentences(html: str) -> list[str]:
    part = html[html.index('id="explanation"'):]
    return [_text(p) for p in re.findall(r"<p>(.*?)</p>", part[:part.index("</section>")], re.S)]


def test_queue_page_figures_children_and_explanation(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/research/").content.decode()
    assert re.findall(r'<td class="deserved-\d" data-dim="([^"]+)">([^<]+)</td>', html) == [
        ("cpu", "192 cores"), ("memory", "1.5 TiB"), ("nvidia.com/gpu", "40 GPUs")]
    children = html[html.index('id="children"'):]
    assert re.findall(r'<a href="/queues/([^/]+)/">', children)[:2] == ["nlp", "vision"]
    # research asks 1,017 cores (nlp-train 384 with gpt-giant's 320, nlp-eval 58, vision 575), 6,349 GiB
    # and 204 GPUs (nlp-train 192, vision 12): above its deserved on every resource.
    assert _sentences(html) == [
        "The capacity plugin starts from the deserved configured for queue research: 192 cores, 1.5 TiB of "
        "memory, 40 GPUs.",
        "It fits within its real capability and above its guarantee, so it is kept as is.",
        "It may never use more than its capability, 200 cores, 1,600 GiB of memory, 40 GPUs.",
        "Queue research asks for more than it deserves on cpu, memory and GPU (cpu: asks 1,017 cores, "
        "deserves 192 cores; memory: asks 6,349 GiB, deserves 1.5 TiB; GPU: asks 204 GPUs, deserves 40 "
        "GPUs).",
        "Result: queue research deserves 192 cores, 1.5 TiB of memory, 40 GPUs.",
    ]
    assert "Figures of the latest scheduling cycle" in _text(html)


def test_leaf_queue_page_lists_jobs_and_explains_its_share(cycled, client_as):
    html = client_as(cycled["viewer"]).get("/queues/vision/").content.decode()
    jobs = re.findall(r'<a href="/jobs/vision/([^/]+)/">', html)
    assert jobs == ["resnet-train", "augment-preproc", "detector-train", "labeling-export", "megabatch",
                    "tf-dist"]  # unfinished jobs in submission order
    assert _sentences(html) == [
        "The capacity plugin starts from the deserved configured for queue vision: 64 cores, 512 GiB of "
        "memory, 16 GPUs.",
        "It sits under research, which deserves 192 cores, 1.5 TiB of memory, 40 GPUs.",
        "It fits within its real capability and above its guarantee, so it is kept as is.",
        # Its own capability sets no memory: research's 1,600 GiB bounds it.
        "It may never use more than its capability, 96 cores, 1,600 GiB of memory, 16 GPUs (memory inherited "
        "from research).",
        # 505 GiB and 12 GPUs asked are within its deserved: only cpu is short.
        "Queue vision asks for more than it deserves on cpu (cpu: asks 575 cores, deserves 64 cores).",
        "Result: queue vision deserves 64 cores, 512 GiB of memory, 16 GPUs.",
    ]


def test_chart_json_current_bars_and_history(cycled, client_as):
    body = client_as(cycled["viewer"]).get("/queues/vision/chart.json?range=all").json()
    assert body["range"] == "all" and body["samples"] == 1 and body["bucket_seconds"] is None
    assert sorted(body["figures"]) == [
        "chart-cpu-current", "chart-cpu-history", "chart-memory-current", "chart-memory-history",
        "chart-nvidia-com-gpu-current", "chart-nvidia-com-gpu-history"]
    cpu = body["figures"]["chart-cpu-current"]["data"][0]
    # allocated 47, pending 575 - 47, deserved 64, no guarantee, frame: real capability 96.
    assert cpu["y"] == [47, 528, 64, None, 96]
    gpu = body["figures"]["chart-nvidia-com-gpu-current"]["data"][0]
    assert gpu["y"] == [4, 8, 16, None, 16]  # resnet's 4 held, detector-train's 8 pending
    history = body["figures"]["chart-cpu-history"]["data"]
    assert [(t["name"], t["y"]) for t in history] == [("Deserved", [64]), ("Allocated", [47]),
                                                      ("Requested", [575])]
    # One cycle: a two-minute window around it, not Plotly's zoom to milliseconds.
    span = body["figures"]["chart-cpu-history"]["layout"]["xaxis"]["range"]
    start, end = (datetime.fromisoformat(t) for t in span)
    assert end - start == timedelta(minutes=2)
    assert start + timedelta(minutes=1) == datetime.fromisoformat(history[0]["x"][0])


def test_history_figure_keeps_plotly_range_over_two_minutes():
    t0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    points = [{"time": t0 + timedelta(seconds=s), "allocated": {"cpu": 1000.0}} for s in (0, 59, 130)]
    assert "xaxis" not in history_figure(points, "cpu")["layout"]
    assert history_figure(points[:2], "cpu")["layout"]["xaxis"]["range"] == [
        (t0 - timedelta(seconds=30.5)).isoformat(), (t0 + timedelta(seconds=89.5)).isoformat()]


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
    # Quantities as a person writes them, not stored units (1099511627776 bytes, 128000 milli-cpu).
    deserved = '{"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "24"}'
    assert fields["deserved"].replace("&quot;", '"') == deserved
    assert fields["guarantee"].replace("&quot;", '"') == '{"cpu": "16", "memory": "64Gi"}'
    assert fields["capability"] == ""
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

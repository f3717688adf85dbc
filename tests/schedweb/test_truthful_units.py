"""Finding 7 (issue 16): internal units leaked: the audit log showed `"cpu": 96000.0` and float
bytes, the edit form `"memory": 1717986918400` under a hint saying "16Gi", reason details
`344.0000000000001`. Pages show cores, GiB / TiB and GPUs; the form shows quantities as written
and parses them back to the same stored value."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from schedweb.core import services
from schedweb.core.models import Job, Queue
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from tests.schedweb.test_truthful_support import page, staff, text

RAW = re.compile(r"\d{7,}|\d\.\d{4,}")  # stored units (milli-cpu, bytes) or float noise


@pytest.fixture
def cycled(db):
    load_demo()
    assert not cycle_run().errors


PAGES = ["/", "/queues/", "/queues/research/", "/queues/nlp-eval/", "/jobs/pending/", "/mine/",
         "/jobs/nlp/gpt-giant/", "/jobs/vision/detector-train/", "/jobs/prod/in-memory-join/",
         "/jobs/nlp/elastic-hpo/", "/jobs/nlp/bert-pretrain/"]


@pytest.mark.parametrize("url", PAGES)
def test_pages_show_no_stored_units_or_float_noise(cycled, url):
    html = page(url)
    body = html[html.index("<main"):]
    # The edit form's boxes hold quantities (checked below); everything else is prose and tables.
    body = re.sub(r"<textarea.*?</textarea>", "", body, flags=re.S)
    assert RAW.findall(text(body)) == []


def test_reason_details_are_rounded_output_units(cycled):
    def numbers(value):
        if isinstance(value, dict):
            for v in value.values():
                yield from numbers(v)
        elif isinstance(value, list):
            for v in value:
                yield from numbers(v)
        elif isinstance(value, float):
            yield value

    for job in Job.objects.exclude(reason_code=""):
        for value in numbers(job.reason_details):
            assert value == round(value, 3), (job.name, value)


def test_edit_form_shows_quantities_and_round_trips(cycled):
    client = Client()
    client.force_login(staff())
    html = client.get("/queues/research/").content.decode()
    boxes = {k: v.replace("&quot;", '"') for k, v in
             re.findall(r'<textarea name="(\w+)"[^>]*>\s*([^<]*)</textarea>', html)}
    assert json.loads(boxes["capability"]) == {"cpu": "200", "memory": "1600Gi", "nvidia.com/gpu": "40"}
    assert json.loads(boxes["deserved"]) == {"cpu": "192", "memory": "1536Gi", "nvidia.com/gpu": "40"}
    before = Queue.objects.get(name="research")
    data = {"weight": before.weight, "priority": before.priority, "reclaimable": "on", **boxes}
    response = client.post("/queues/research/edit/", data)
    assert response.status_code == 302
    after = Queue.objects.get(name="research")
    assert (after.capability, after.deserved, after.guarantee) == (before.capability, before.deserved, None)


@pytest.mark.parametrize("stored", [
    {"cpu": 500.0, "memory": 536870912.0},
    {"cpu": 96000.0, "memory": 1717986918400.0, "nvidia.com/gpu": 16000.0},
    {"cpu": 1.0, "memory": 1000000001.0},  # no binary unit fits: plain bytes
    {"cpu": 12345.0, "memory": 3 * 2**40, "example.com/fpga": 500.0},
])
def test_any_stored_map_round_trips_through_the_form(cycled, stored):
    from schedweb.dashboard.forms import QueueEditForm

    queue = Queue.objects.get(name="legacy")
    Queue.objects.filter(pk=queue.pk).update(guarantee=None, deserved=None, capability=stored)
    queue.refresh_from_db()
    shown = QueueEditForm(queue=queue)["capability"].value()  # the box's text, as the page renders it
    data = {"weight": 1, "priority": 0, "reclaimable": "on", "capability": shown, "deserved": "",
            "guarantee": ""}
    bound = QueueEditForm(data, queue=queue)
    assert bound.is_valid(), bound.errors
    assert Queue.objects.get(pk=queue.pk).capability == stored


def test_audit_log_reads_in_human_units(cycled):
    user = staff()
    services.queue_update(queue=Queue.objects.get(name="vision"), actor=user,
                          capability={"cpu": "128", "memory": "1536Gi", "nvidia.com/gpu": 16})
    html = page("/audit/?object_key=vision")
    rows = re.findall(r"<tr><th>([^<]+)</th><td class=\"before\"><code>([^<]+)</code></td>"
                      r"<td class=\"arrow\">&rarr;</td><td class=\"after\"><code>([^<]+)</code></td></tr>",
                      html)
    assert rows[:2] == [("capability: cpu", "96 cores", "128 cores"),
                        ("capability: memory", "unset", "1.5 TiB")]
    assert "96000" not in html and "1649267441664" not in html

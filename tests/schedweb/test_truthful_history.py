"""Finding 4 (issue 16): parent queue pages had empty history charts ("0 samples") and the API no
share history. Under the default configuration every queue, parents included, has samples; the
page's charts and GET /api/v1/queues/{name}/history/ read them (tests/schedweb/api/test_queue_history.py
covers the endpoint, downsampling, and flat configurations)."""

from __future__ import annotations

import pytest
from django.test import Client

from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from tests.schedweb.test_truthful_support import staff


@pytest.mark.django_db
@pytest.mark.parametrize("queue", ["research", "nlp", "production", "dev"])
def test_parent_queue_pages_have_history(queue):
    load_demo()
    for _ in range(3):
        assert not cycle_run().errors
    client = Client()
    client.force_login(staff())
    body = client.get(f"/queues/{queue}/chart.json?range=1h").json()
    assert body["samples"] == 3
    lines = body["figures"]["chart-cpu-history"]["data"]
    assert [(t["name"], len(t["y"])) for t in lines] == [("Deserved", 3), ("Allocated", 3), ("Requested", 3)]
    api = client.get(f"/api/v1/queues/{queue}/history/")
    assert api.status_code == 200 and len(api.json()["points"]) == 3

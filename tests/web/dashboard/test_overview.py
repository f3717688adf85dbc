"""Overview: utilisation per resource, cycle health, pending by reason, borrowing / starving queues."""

from __future__ import annotations

import re

from schedweb.dashboard.views.overview import overview_context


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_before_any_cycle(demo, client_as):
    html = client_as(demo["viewer"]).get("/").content.decode()
    text = _text(html)
    # Schedulable nodes: 11 cpu (cpu-12 is cordoned) x 32 + 6 gpu x 64 + 3 highmem x 96 = 1,024 cores.
    assert "of 1,024 cores allocated" in text
    assert "no cycle yet" in text
    assert "Not scheduled yet 17" in text  # every waiting demo job, no reason recorded yet
    assert "Deserved shares appear after the first scheduling cycle." in text


def test_after_one_cycle(cycled, client_as):
    context = overview_context()
    assert [(u["dim"], u["percent"]) for u in context["utilisation"]] == [
        ("cpu", 33.2), ("memory", 29.3), ("nvidia.com/gpu", 91.7)]
    assert context["by_reason"] == [("QueueOverDeserved", "Queue at its deserved share", 8)]
    assert context["pending_total"] == 8
    assert [v.name for v in context["starving"]] == ["dev", "sandbox", "research", "nlp", "nlp-train",
                                                     "vision"]
    assert context["borrowing"] == []
    health = context["health"]
    assert health.cycles_recent == 1 and health.skipped_recent == 0 and health.config_version == 1
    text = _text(client_as(cycled["viewer"]).get("/").content.decode())
    assert "339.5 of 1,024 cores allocated" in text
    assert "44 GPUs of 48 GPUs allocated" in text
    assert "Queue at its deserved share 8" in text
    assert "0 skipped of 1 in the last hour; config v1" in text


def test_htmx_poll_returns_only_the_body(cycled, client_as):
    client = client_as(cycled["viewer"])
    full = client.get("/").content.decode()
    part = client.get("/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 5s"' in full and "<html" in full
    assert "<html" not in part and 'id="cycle-health"' in part


def test_a_queue_above_its_deserved_share_is_borrowing(cycled, client_as):
    from schedweb.core import services
    from schedweb.core.models import Queue

    # Lower nlp-eval's capability below what it holds (48 cores): the next cycle's deserved is 40.
    services.queue_update(queue=Queue.objects.get(name="nlp-eval"),
                          capability={"cpu": "40", "memory": "192Gi"})
    from schedweb.scheduling.cycle import cycle_run

    assert not cycle_run().errors
    context = overview_context()
    assert [v.name for v in context["borrowing"]] == ["nlp-eval"]
    text = _text(client_as(cycled["viewer"]).get("/").content.decode())
    assert "nlp-eval CPU 48 / 40" in text

"""Overview: utilisation per resource, cycle health, pending by reason, borrowing / starving queues.

Demo after one cycle under hierarchical capacity (schedweb.core.demo_data): cpu held 323.5 cores =
research 159 (nlp-train 64: bert 4 x 8 + llm 2 x 16; nlp-eval 48, its capability; vision 47:
resnet 2 x 8 + augment 6 x 2 + labeling 1 + tf-dist 2 + 4 x 4) + production 156 (etl 120, its
capability; serving-batch 36: nightly 4 x 4 + embedding 8 x 2 + report-weekly 2 x 2) + dev 8.5
(notebooks 2 + 4, ci-smoke 2 x 1, lint-all 0.5); GPUs 36 = bert 16 + llm 16 + resnet 4 (detector-
train's 8 more would take research over its 40).
"""

from __future__ import annotations

import re

from schedweb.dashboard.views.overview import overview_context


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_before_any_cycle(demo, client_as):
    html = client_as(demo["viewer"]).get("/").content.decode()
    text = _text(html)
    # Schedulable nodes: 11 cpu (cpu-12 is cordoned) x 32 + 6 gpu x 64 + 3 highmem x 96 = 1,024 cores.
    assert "0 cores of 1,024 cores allocated" in text
    assert "no cycle yet" in text
    assert "Not scheduled yet 17" in text  # every waiting demo job, no reason recorded yet
    assert "Deserved shares appear after the first scheduling cycle." in text


def test_after_one_cycle(cycled, client_as):
    context = overview_context()
    # 323.5 / 1024 cores; memory 2,597.5 of 9,088 GiB; 36 of 48 GPUs.
    assert [(u["dim"], u["percent"]) for u in context["utilisation"]] == [
        ("cpu", round(100 * 323.5 / 1024, 1)), ("memory", round(100 * 2597.5 / 9088, 1)),
        ("nvidia.com/gpu", 75.0)]
    assert context["by_reason"] == [("NeverFits", "Can never run", 4),
                                    ("QueueOverCapability", "Queue at its capability", 5)]
    assert context["pending_total"] == 9
    health = context["health"]
    assert health.cycles_recent == 1 and health.skipped_recent == 0 and health.config_version == 1
    text = _text(client_as(cycled["viewer"]).get("/").content.decode())
    assert "323.5 cores of 1,024 cores allocated" in text
    assert "36 GPUs of 48 GPUs allocated" in text
    assert "Can never run 4 Queue at its capability 5" in text
    assert "0 skipped of 1 in the last hour; config v1" in text


def test_borrowing_and_starving_say_what_the_figures_show(cycled):
    context = overview_context()
    # Above deserved: nlp and nlp-train hold 32 GPUs (bert 16 + llm 16) of a deserved 24; nlp-eval
    # holds its capability (48 cores, 176 GiB) above its deserved 32 cores / 128 GiB.
    assert [(s.view.name, s.text) for s in context["borrowing"]] == [
        ("nlp", "allocated / deserved: GPU 32 / 24 GPUs"),
        ("nlp-eval", "allocated / deserved: cpu 48 / 32 cores, memory 176 / 128 GiB"),
        ("nlp-train", "allocated / deserved: GPU 32 / 24 GPUs"),
    ]
    # Starving = named by waiting jobs' share reasons, each job at one queue only: etl (backfill-2024,
    # etl-returns), research (detector-train: 8 GPUs, 4 left), nlp-eval (tokenize-corpus, elastic-hpo).
    # Their parents (production, nlp) and the leaves under research are not counted again.
    assert [(s.view.name, s.text) for s in context["starving"]] == [
        ("etl", "2 waiting jobs need room in this queue under its real capability: "
                "cpu 120 / 120 cores allocated, 0 cores left"),
        ("research", "1 waiting job needs room in this queue under its real capability: "
                     "GPU 36 / 40 GPUs allocated, 4 GPUs left"),
        ("nlp-eval", "2 waiting jobs need room in this queue under its real capability: "
                     "cpu 48 / 48 cores allocated, 0 cores left"),
    ]


def test_htmx_poll_returns_only_the_body(cycled, client_as):
    client = client_as(cycled["viewer"])
    full = client.get("/").content.decode()
    part = client.get("/", HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 5s"' in full and "<html" in full
    assert "<html" not in part and 'id="cycle-health"' in part


def test_a_queue_above_its_deserved_share_is_borrowing(cycled, client_as):
    from schedweb.core import services
    from schedweb.core.models import Queue
    from schedweb.scheduling.cycle import cycle_run

    # Lower etl's capability and deserved below the 120 cores it holds: the next cycle says so.
    services.queue_update(queue=Queue.objects.get(name="etl"), capability={"cpu": "100", "memory": "2000Gi"},
                          deserved={"cpu": "100", "memory": "2000Gi"})
    assert not cycle_run().errors
    context = overview_context()
    assert ("etl", "allocated / deserved: cpu 120 / 100 cores") in [(s.view.name, s.text)
                                                                     for s in context["borrowing"]]
    text = _text(client_as(cycled["viewer"]).get("/").content.decode())
    assert "etl allocated / deserved: cpu 120 / 100 cores" in text

"""Plain-language explanations of the queue plugins' JSON, and amount formatting (no database)."""

from __future__ import annotations

import pytest

from schedweb.dashboard.explain import explain
from schedweb.dashboard.pending import failure_summary, reason_sentence
from schedweb.dashboard.units import dims_of, fmt, fmt_map, percent

GIB = 2**30


@pytest.mark.parametrize(("dim", "stored", "text"), [
    ("cpu", 500, "0.5"), ("cpu", 96000, "96"), ("cpu", 1024000, "1,024"), ("cpu", None, "\u2014"),
    ("memory", 64 * GIB, "64 GiB"), ("memory", 1.5 * GIB, "1.5 GiB"), ("nvidia.com/gpu", 8000, "8 GPUs"),
    ("example.com/fpga", 2000, "2"),
])
def test_fmt(dim, stored, text):
    assert fmt(dim, stored) == text


def test_fmt_map_and_dims():
    assert fmt_map({"memory": 16 * GIB, "nvidia.com/gpu": 1000, "cpu": 4000, "pods": 110}) == \
        "cpu 4, memory 16 GiB, GPU 1 GPUs"
    assert fmt_map(None) == "unset"
    assert dims_of([{"cpu": 1, "pods": 3}, {"x/y": 1, "memory": 2}, None]) == ["cpu", "memory", "x/y"]
    assert (percent(1, 3), percent(1, 0), percent(None, 4)) == (33.3, None, None)


PROPORTION = {
    "plugin": "proportion", "cluster_total": {"cpu": 100.0, "memory": 400 * GIB},
    "total_guarantee": {}, "weight": 1, "request": {"cpu": 80.0, "memory": 80 * GIB},
    "capability": {}, "guarantee": {"cpu": 0.0}, "real_capability": {"cpu": 100.0, "memory": 400 * GIB},
    "deserved": {"cpu": 50.0, "memory": 80 * GIB},
    "rounds": [
        {"round": 1, "remaining": {"cpu": 100.0, "memory": 400 * GIB}, "total_weight": 2.0, "weight": 1,
         "deserved": {"cpu": 50.0, "memory": 80 * GIB}, "clamp": "none", "clamps": {"memory": "request"},
         "met": False, "scaled_down": False},
    ],
    "rounds_total": 1, "algorithm_rounds": 2,
}


def test_proportion_explanation_in_words():
    story = explain(PROPORTION, "team-a")
    assert story.plugin == "proportion"
    assert story.sentences == [
        "The proportion plugin shares the cluster (cpu 100, memory 400 GiB) among the queues that have work, "
        "in proportion to their weights, round after round: a queue that gets all it asks for drops out and "
        "what it leaves is shared again among the others.",
        "Queue team-a has weight 1 and asks for cpu 80, memory 80 GiB.",
        "It took part in 1 of 2 rounds. In the last one, cpu 100, memory 400 GiB was still unshared among "
        "queues of total weight 2.0; its weight 1 brought its deserved to cpu 50, memory 80 GiB, not capped: "
        "it keeps its weighted part.",
        "Result: queue team-a deserves cpu 50, memory 80 GiB.",
    ]
    assert story.rounds[0]["clamp"] == "not capped: it keeps its weighted part"
    assert story.more_rounds == 0


@pytest.mark.parametrize(("clamp", "sentence"), [
    ("real capability", "That is more than its real capability (cpu 8: its capability, or what its parents "
                        "leave it), so it is capped there."),
    ("guarantee", "That is less than its guarantee (cpu 2), so it is raised to the guarantee."),
    ("none", "It fits within its real capability and above its guarantee, so it is kept as is."),
])
def test_capacity_explanation_names_the_clamp(clamp, sentence):
    data = {"plugin": "capacity", "spec_deserved": {"cpu": 10.0}, "real_capability": {"cpu": 8.0},
            "guarantee": {"cpu": 2.0}, "deserved": {"cpu": 8.0}, "clamp": clamp, "best_effort": False,
            "capability": None, "parent": {"queue": "org", "deserved": {"cpu": 20.0}}}
    story = explain(data, "team-b")
    assert story.sentences == [
        "The capacity plugin starts from the deserved configured for queue team-b: cpu 10.",
        "It sits under org, which deserves cpu 20.",
        sentence,
        "Result: queue team-b deserves cpu 8.",
    ]


def test_best_effort_and_missing_explanations():
    assert explain(None, "q") is None
    story = explain({"plugin": "capacity", "best_effort": True}, "q")
    assert story.sentences[0].startswith("Queue q has no deserved resources")


def test_reason_sentence_and_failure_summary():
    assert reason_sentence("NodeFit", "0/3 nodes are unavailable: 3 Insufficient cpu.") == \
        "No node has room for its tasks right now: 0/3 nodes are unavailable: 3 Insufficient cpu."
    assert reason_sentence("", "") == "No scheduling cycle has looked at this job yet."
    assert failure_summary({"b": 8, "a": 8, "Insufficient cpu": 12}) == "12 Insufficient cpu, 8 a, 8 b"
    assert failure_summary(None) == ""

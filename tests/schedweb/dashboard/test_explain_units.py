"""Plain-language explanations of the queue plugins' JSON, and amounts in human units (no database).

Each sentence is checked against the numbers it is generated from: a request is called met only
when it is within the deserved on every resource (issue 16, item 5).
"""

from __future__ import annotations

import pytest

from schedweb.dashboard.explain import explain, unmet_dims
from schedweb.dashboard.reason_text import failure_summary, reason_sentence
from schedweb.dashboard.units import dims_of, fmt, fmt_map, fmt_output, fmt_ratio, percent

GIB = 2**30
TIB = 2**40


@pytest.mark.parametrize(("dim", "stored", "text"), [
    ("cpu", 500, "0.5 cores"), ("cpu", 1000, "1 core"), ("cpu", 96000, "96 cores"),
    ("cpu", 1024000, "1,024 cores"), ("cpu", 344000.0000000001, "344 cores"), ("cpu", 125, "0.125 cores"),
    ("cpu", None, "\u2014"), ("cpu", float("inf"), "unlimited"),
    ("memory", 64 * GIB, "64 GiB"), ("memory", 1.5 * GIB, "1.5 GiB"), ("memory", 1.5 * TIB, "1.5 TiB"),
    ("memory", 2000 * GIB, "2,000 GiB"),  # not a round TiB figure: kept in the unit it was written in
    ("memory", 512 * 2**20, "512 MiB"), ("memory", 10**9, "953.67 MiB"), ("memory", 0, "0 GiB"),
    ("nvidia.com/gpu", 8000, "8 GPUs"), ("nvidia.com/gpu", 1000, "1 GPU"),
    ("example.com/fpga", 2000, "2 example.com/fpga"),
])
def test_fmt(dim, stored, text):
    assert fmt(dim, stored) == text


def test_ratio_output_units_and_maps():
    assert fmt_ratio("cpu", 159000, 192000) == "159 / 192 cores"
    assert fmt_ratio("memory", 873 * GIB, 1536 * GIB) == "873 GiB / 1.5 TiB"
    assert fmt_ratio("nvidia.com/gpu", 1000, 1000) == "1 / 1 GPUs"
    assert fmt_ratio("cpu", 1000, None) == "1 core / \u2014"
    # Output units (API, reason details): cores, bytes, units.
    outputs = [("cpu", 344.0000000000001), ("memory", 1.5 * TIB), ("nvidia.com/gpu", 8)]
    assert [fmt_output(d, v) for d, v in outputs] == ["344 cores", "1.5 TiB", "8 GPUs"]
    assert fmt_map({"memory": 16 * GIB, "nvidia.com/gpu": 1000, "cpu": 4000, "pods": 110}) == \
        "4 cores, 16 GiB of memory, 1 GPU"
    assert fmt_map(None) == "unset"
    assert dims_of([{"cpu": 1, "pods": 3}, {"x/y": 1, "memory": 2}, None]) == ["cpu", "memory", "x/y"]
    assert (percent(1, 3), percent(1, 0), percent(None, 4)) == (33.3, None, None)


def _proportion(request: dict, deserved: dict, unmet: list[str], clamp: str) -> dict:
    return {
        "plugin": "proportion", "cluster_total": {"cpu": 100.0, "memory": 400 * GIB, "nvidia.com/gpu": 48.0},
        "total_guarantee": {}, "weight": 1, "request": request, "capability": {}, "guarantee": {"cpu": 0.0},
        "real_capability": {"cpu": 100.0, "memory": 400 * GIB}, "deserved": deserved, "unmet": unmet,
        "rounds": [{"round": 1, "remaining": {"cpu": 100.0, "memory": 400 * GIB}, "total_weight": 2.0,
                    "weight": 1, "deserved": deserved, "clamp": clamp, "clamps": {}, "met": not unmet,
                    "scaled_down": False}],
        "rounds_total": 1, "algorithm_rounds": 2,
    }


def test_proportion_explanation_in_words():
    story = explain(_proportion({"cpu": 80.0, "memory": 80 * GIB}, {"cpu": 50.0, "memory": 80 * GIB},
                                ["cpu"], "none"), "team-a")
    assert story.plugin == "proportion"
    assert story.sentences == [
        "The proportion plugin shares the cluster (100 cores, 400 GiB of memory, 48 GPUs) among the queues "
        "that have work, in proportion to their weights, round after round: a queue that gets all it asks "
        "for drops out and what it leaves is shared again among the others.",
        "Queue team-a has weight 1 and asks for 80 cores, 80 GiB of memory.",
        "It took part in 1 of 2 rounds. In the last one, 100 cores, 400 GiB of memory was still unshared "
        "among queues of total weight 2.0; its weight 1 brought its deserved to 50 cores, 80 GiB of memory, "
        "not capped: it keeps its weighted part.",
        "Queue team-a asks for more than it deserves on cpu (cpu: asks 80 cores, deserves 50 cores).",
        "Result: queue team-a deserves 50 cores, 80 GiB of memory.",
    ]
    assert story.rounds[0]["clamp"] == "not capped: it keeps its weighted part"
    assert story.more_rounds == 0


def test_a_queue_asking_192_gpus_that_deserves_36_is_not_called_satisfied():
    """Finding 5: the round's clamp said "request" (memory was capped at its request) and the page
    said "its whole request is met" while 192 GPUs were asked and 36 deserved."""
    data = _proportion({"cpu": 40.0, "memory": 64 * GIB, "nvidia.com/gpu": 192.0},
                       {"cpu": 40.0, "memory": 64 * GIB, "nvidia.com/gpu": 36.0}, ["nvidia.com/gpu"], "none")
    sentences = explain(data, "nlp-train").sentences
    assert not any("whole request" in s for s in sentences)
    assert ("Queue nlp-train asks for more than it deserves on GPU (GPU: asks 192 GPUs, deserves 36 GPUs)."
            in sentences)


@pytest.mark.parametrize(("request_", "deserved", "unmet"), [
    ({"cpu": 8000.0}, {"cpu": 8000.0}, []),
    ({"cpu": 8000.0, "nvidia.com/gpu": 192000.0}, {"cpu": 8000.0, "nvidia.com/gpu": 36000.0},
     ["nvidia.com/gpu"]),
    ({"cpu": 9000.0, "memory": 2.0}, {"cpu": 8000.0, "memory": 1.0}, ["cpu"]),  # a byte is rounding
    ({"cpu": 1.0}, None, []),
    ({}, {"cpu": 1.0}, []),
])
def test_unmet_is_request_above_deserved_on_some_resource(request_, deserved, unmet):
    assert unmet_dims(request_, deserved) == unmet


def test_a_met_request_is_said_only_when_every_resource_is_within_deserved():
    data = _proportion({"cpu": 40.0}, {"cpu": 40.0}, [], "request")
    sentences = explain(data, "q").sentences
    assert "Its deserved covers its whole request (40 cores)." in sentences
    assert sentences[2].endswith("brought its deserved to 40 cores, capped at what the queue asks for.")


CAPACITY = {"plugin": "capacity", "spec_deserved": {"cpu": 10.0, "memory": 8 * GIB},
            "real_capability": {"cpu": 8.0, "memory": 64 * GIB},
            "after_real_capability": {"cpu": 8.0, "memory": 8 * GIB},
            "guarantee": {"cpu": 2.0, "memory": 16 * GIB}, "deserved": {"cpu": 8.0, "memory": 16 * GIB},
            "clamp": "guarantee", "best_effort": False, "capability": None,
            "parent": {"queue": "org", "deserved": {"cpu": 20.0}}}


def test_capacity_explanation_names_each_clamp_on_its_resources():
    story = explain(CAPACITY, "team-b", request={"cpu": 4000.0, "memory": 20 * GIB})
    assert story.sentences == [
        "The capacity plugin starts from the deserved configured for queue team-b: 10 cores, 8 GiB of "
        "memory.",
        "It sits under org, which deserves 20 cores.",
        "On cpu that is more than its real capability (8 cores: its capability, or what its parents leave "
        "it), so it is capped there.",
        "On memory that is less than its guarantee (16 GiB of memory), so it is raised to the guarantee.",
        "Queue team-b asks for more than it deserves on memory (memory: asks 20 GiB, deserves 16 GiB).",
        "Result: queue team-b deserves 8 cores, 16 GiB of memory.",
    ]


def test_capacity_kept_as_is_and_a_met_request():
    spec = CAPACITY["spec_deserved"]
    data = {**CAPACITY, "after_real_capability": spec, "deserved": spec, "clamp": "none", "parent": None}
    story = explain(data, "q", request={"cpu": 4000.0})
    assert story.sentences[1:] == [
        "It fits within its real capability and above its guarantee, so it is kept as is.",
        "Its deserved covers its whole request (4 cores).",
        "Result: queue q deserves 10 cores, 8 GiB of memory.",
    ]


def test_best_effort_rollup_and_missing_explanations():
    assert explain(None, "q") is None
    story = explain({"plugin": "capacity", "best_effort": True}, "q")
    assert story.sentences[0].startswith("Queue q has no deserved resources")
    assert explain({"plugin": "rollup", "children": ["a", "b"]}, "p").sentences == [
        "The active configuration computes no share for parent queue p: its figures are the sums of its "
        "children's (a, b)."]


def test_reason_sentence_and_failure_summary():
    assert reason_sentence("NodeFit", "0/3 nodes are unavailable: 3 Insufficient cpu.") == \
        "No node has room for its tasks right now: 0/3 nodes are unavailable: 3 Insufficient cpu."
    assert reason_sentence("", "") == "No scheduling cycle has looked at this job yet."
    assert failure_summary({"b": 8, "a": 8, "Insufficient cpu": 12}) == "12 Insufficient cpu, 8 a, 8 b"
    assert failure_summary(None) == ""

"""Job routing in scenarios (docs/scenario-format.md): jobs' `scheduler_name` and the
`sharding:` keys `scheduler_name` / `schedulers` become the Sharding's foreign jobs; bad input
as FILE:LINE: message."""

from __future__ import annotations

import textwrap

import pytest

from scheduler_core.framework.sharding import Sharding, foreign_of, responsible
from scheduler_core.scenario import ScenarioError, load_scenario

HEAD = """\
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: "8Gi"}}
queues:
  - {name: default}
jobs:
  - {name: a, scheduler_name: sched-a, tasks: [{name: t1}]}
  - {name: b, scheduler_name: sched-b, tasks: [{name: t2}]}
  - {name: c, tasks: [{name: t3}]}
"""  # 8 lines: the sharding block below starts at line 9


def load(block: str):
    return load_scenario(HEAD + textwrap.dedent(block), filename="s.yaml")


def test_a_shard_instance_takes_the_jobs_naming_it():
    scenario = load("sharding:\n  scheduler_name: sched-a\n")
    assert scenario.sharding == Sharding(scheduler_name="sched-a",
                                         foreign_jobs=frozenset({"default/b", "default/c"}))


def test_the_default_instance_takes_every_job_naming_no_shard():
    assert load("sharding:\n  schedulers: [sched-a]\n").sharding == Sharding(
        foreign_jobs=frozenset({"default/a"}))
    assert load("sharding: {}\n").sharding == Sharding()  # no shard named: every job is its own
    assert load("").sharding is None


def test_responsible():
    assert responsible("sched-a", "sched-a", {"sched-a", "sched-b"})
    assert not responsible("sched-b", "sched-a", {"sched-a", "sched-b"})
    assert not responsible("volcano", "sched-a", {"sched-a"})
    assert responsible("volcano", "", {"sched-a"})
    assert responsible("anything", "", {"sched-a"})
    assert not responsible("sched-a", "", {"sched-a"})
    assert foreign_of({"x": "sched-a", "y": "volcano"}, "volcano", ["sched-a"]) == {"x"}


@pytest.mark.parametrize(("block", "line", "message"), [
    ("sharding:\n  scheduler_name: ''\n", 10, "sharding.scheduler_name: expected a non-empty"),
    ("sharding:\n  schedulers: [3]\n", 10, "sharding.schedulers[0]: expected a scheduler name, got 3"),
    ("sharding:\n  schedulers: a\n", 10, "sharding.schedulers: expected a list, got str"),
])
def test_bad_input_names_the_line(block, line, message):
    with pytest.raises(ScenarioError) as info:
        load(block)
    assert info.value.line == line
    assert message in str(info.value)


def test_a_bad_job_scheduler_name_names_the_line():
    text = HEAD.replace("scheduler_name: sched-b", "scheduler_name: ''")
    with pytest.raises(ScenarioError) as info:
        load_scenario(text, filename="s.yaml")
    assert info.value.line == 7
    assert "jobs[1].scheduler_name" in str(info.value)

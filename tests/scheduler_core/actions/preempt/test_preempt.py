"""preempt: between jobs of one queue by priority, inside a job by task priority."""

from __future__ import annotations

import pytest

from tests.scheduler_core.builders import conf, job, node, replicas, run, snapshot, task

TIERS = [["priority", "gang"], ["predicates"]]
# Gang only gives up tasks above min_available, and a starving job never has any: the
# within-job cases switch gang's victim selection off, leaving priority to decide.
WITHIN = [["priority", {"name": "gang", "enabledPreemptable": False}], ["predicates"]]


def _run(name: str, node_name: str, cpu: str = "2", **kw):
    return task(name, cpu=cpu, status="Running", node=node_name, **kw)


def _low(preemptable: bool = True, n1_preemptable: bool | None = None):
    n1p = preemptable if n1_preemptable is None else n1_preemptable
    return job("low", priority=1, created=1.0, tasks=[
        _run("l-0", "n1", preemptable=n1p), _run("l-1", "n1", preemptable=n1p),
        _run("l-2", "n2", preemptable=preemptable), _run("l-3", "n2", preemptable=preemptable),
        _run("l-4", "n3", preemptable=preemptable)])


def _high(n: int = 1, cpu: str = "3", **kw):
    return job("high", priority=100, created=2.0, min_available=n, tasks=replicas("h", n, cpu=cpu, **kw))


CASES = [
    pytest.param(  # victims on one node, lowest task order first, until the preemptor fits
        [_low(), _high()], ["ns/l-1", "ns/l-0"], {"ns/h-0": "n1"}, id="evict-until-fits"),
    pytest.param(  # a 2-cpu preemptor needs only one victim
        [_low(), _high(cpu="2")], ["ns/l-1"], {"ns/h-0": "n1"}, id="one-victim-enough"),
    pytest.param(  # preemption_policy Never: the task waits instead
        [_low(), _high(preemption_policy="Never")], [], {}, id="never-policy"),
    pytest.param(  # n1's tasks are not preemptable: n2 is used instead
        [_low(n1_preemptable=False), _high()], ["ns/l-3", "ns/l-2"], {"ns/h-0": "n2"},
        id="non-preemptable-victims"),
    pytest.param(  # nothing preemptable anywhere
        [_low(preemptable=False), _high()], [], {}, id="no-victims"),
    pytest.param(  # same priority: no victims
        [job("low", priority=100, created=1.0, tasks=[_run("l-0", "n1", cpu="4"), _run("l-1", "n2", cpu="4"),
                                                      _run("l-2", "n3", cpu="4")]),
         _high()], [], {}, id="equal-priority"),
    pytest.param(  # gang of 2 x 3 cpu: n1 and n2 preempted (2 victims each), whole gang pipelined
        [_low(), _high(n=2)], ["ns/l-1", "ns/l-0", "ns/l-3", "ns/l-2"], {"ns/h-0": "n1", "ns/h-1": "n2"},
        id="gang-pipelined"),
    pytest.param(  # gang of 2 but only n1 has victims: all evictions are discarded
        [_low(n1_preemptable=True, preemptable=False), _high(n=2)], [], {}, id="gang-discard"),
    pytest.param(  # low-priority job in another queue is out of reach of preempt
        [job("low", queue="q2", priority=1, tasks=[_run("l-0", "n1", cpu="4"), _run("l-1", "n2", cpu="4"),
                                                    _run("l-2", "n3", cpu="4")]),
         _high()], [], {}, id="other-queue-untouched"),
]


@pytest.mark.parametrize(("jobs", "evictions", "pipelined"), CASES)
def test_preempt_between_jobs(jobs, evictions, pipelined):
    # n3 keeps 2 cpu idle: too small for a 3-cpu preemptor on its own.
    snap = snapshot(nodes=[node("n1"), node("n2"), node("n3")], jobs=jobs)
    result = run(snap, conf("preempt", TIERS))
    assert result.evictions == evictions
    assert result.pipelined == pipelined
    assert result.binds == {}


def test_preempt_within_job_by_task_priority():
    # The gang needs 2; its low-priority running task gives way to the high-priority pending one.
    j = job("j", min_available=2, tasks=[_run("r-0", "n1", cpu="4", priority=1),
                                        task("p-0", cpu="4", priority=10)])
    result = run(snapshot(nodes=[node("n1")], jobs=[j]), conf("preempt", WITHIN))
    assert result.evictions == ["ns/r-0"]
    assert result.pipelined == {"ns/p-0": "n1"}


def test_preempt_within_job_never_policy():
    j = job("j", min_available=2, tasks=[_run("r-0", "n1", cpu="4", priority=1),
                                        task("p-0", cpu="4", priority=10, preemption_policy="Never")])
    result = run(snapshot(nodes=[node("n1")], jobs=[j]), conf("preempt", WITHIN))
    assert result.evictions == []
    assert result.pipelined == {}


def test_preempt_is_deterministic():
    def once():
        snap = snapshot(nodes=[node("n1"), node("n2"), node("n3")], jobs=[_low(), _high(n=2)])
        return run(snap, conf("preempt", TIERS))

    a, b = once(), once()
    assert (a.evictions, a.pipelined) == (b.evictions, b.pipelined)

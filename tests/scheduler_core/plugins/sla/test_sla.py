"""sla: waiting-time parsing, job order by deadline, enqueue/pipeline permits."""

from __future__ import annotations

import functools

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.plugins.sla.sla import parse_duration
from tests.scheduler_core.builders import conf, job, node, run, snapshot, task

NOW = 1_000_000.0


@pytest.mark.parametrize("text,seconds", [
    ("1h", 3600.0), ("2h30m", 9000.0), ("1.5s", 1.5), ("300ms", 0.3), ("1m30s", 90.0), (".5h", 1800.0),
    ("-5m", -300.0), ("0", 0.0), (90, 90.0), (2.5, 2.5),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "h", "1d", " 1h", "1h ", "--1h", "1h-", True, None])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def sla(waiting=None):
    return {"name": "sla"} if waiting is None else {"name": "sla", "arguments": {"sla-waiting-time": waiting}}


@pytest.mark.parametrize("waiting,warning", [
    ("0s", "sla: invalid global sla-waiting-time '0s'; ignored"),
    ("soon", "sla: invalid global sla-waiting-time 'soon'; ignored"),
    (-5, "sla: invalid global sla-waiting-time -5; ignored"),
])
def test_invalid_global_waiting_time_warns(waiting, warning):
    result = run(snapshot(nodes=[node("n1")], now=NOW), conf("enqueue", [[sla(waiting)]]))
    assert result.warnings == [warning]


def ordered(jobs, waiting=None):
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=jobs, now=NOW), conf("allocate", [[sla(waiting)]]))
    return [j.name for j in sorted(ssn.jobs.values(), key=functools.cmp_to_key(ssn.job_compare))]


def test_job_order_sla_jobs_first_then_earliest_deadline():
    jobs = [job("none", tasks=[task("a")], created=0),
            job("late", tasks=[task("b")], created=100, sla_waiting_time=600),   # deadline 700
            job("soon", tasks=[task("c")], created=200, sla_waiting_time=60)]    # deadline 260
    assert ordered(jobs) == ["soon", "late", "none"]


def test_global_waiting_time_applies_to_jobs_without_their_own():
    jobs = [job("own", tasks=[task("a")], created=0, sla_waiting_time=7200),      # deadline 7200
            job("glob", tasks=[task("b")], created=1000)]                          # deadline 4600
    assert ordered(jobs, "1h") == ["glob", "own"]
    assert ordered(jobs) == ["own", "glob"]


def test_equal_deadlines_fall_back_to_creation():
    jobs = [job("b", tasks=[task("x")], created=50, sla_waiting_time=50),
            job("a", tasks=[task("y")], created=0, sla_waiting_time=100)]
    assert ordered(jobs) == ["a", "b"]


# (created seconds before NOW, job waiting time, global, expected vote)
VOTES = [
    (3600, 1800, None, 1),     # waited longer than its SLA: permit
    (1800, 1800, None, 1),     # exactly at the deadline: permit
    (60, 1800, None, 0),       # not yet: abstain
    (3600, None, None, 0),     # no SLA: abstain
    (3600, None, "30m", 1),
    (3600, 7200, "30m", 0),    # the job's own waiting time wins over the global one
]


@pytest.mark.parametrize("age,own,glob,vote", VOTES)
def test_enqueue_and_pipeline_votes(age, own, glob, vote):
    j = job("j", tasks=[task("t")], created=NOW - age, sla_waiting_time=own, phase="Pending")
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=[j], now=NOW), conf("allocate", [[sla(glob)]]))
    for kind in ("job_enqueueable", "job_pipelined"):
        [[(name, fn)]] = ssn.enabled_fns(kind)
        assert (name, fn(j)) == ("sla", vote)


def test_overdue_job_is_enqueued_despite_a_later_tier_rejecting():
    # overcommit alone would reject (pool 4 x 1.2 = 4.8 cpu); sla's permit in tier 1 decides first.
    jobs = [job("old", tasks=[task("a")], min_resources={"cpu": "10"}, phase="Pending",
                created=NOW - 7200, sla_waiting_time=3600),
            job("new", tasks=[task("b")], min_resources={"cpu": "10"}, phase="Pending",
                created=NOW, sla_waiting_time=3600)]
    result = run(snapshot(nodes=[node("n1")], jobs=jobs, now=NOW), conf("enqueue", [["sla"], ["overcommit"]]))
    assert result.job_phase == {"ns/new": "Pending", "ns/old": "Inqueue"}

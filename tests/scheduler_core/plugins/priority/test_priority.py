"""priority: job/task order by priority, lower-priority victims only, job starving."""

from __future__ import annotations

from functools import cmp_to_key

from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def _session(jobs):
    return open_session(
        snapshot(nodes=[node("n1", cpu="100", memory="100Gi")], jobs=jobs), conf("allocate", [["priority"]])
    )


def test_job_and_task_order_by_priority():
    jobs = [
        job("low", tasks=[task("l0")], priority=1, created=1.0),
        job(
            "high",
            tasks=[task("h0", priority=5), task("h1", priority=9), task("h2", priority=5)],
            priority=10,
            created=2.0,
        ),
        job("mid", tasks=[task("m0")], priority=5, created=0.0),
    ]
    ssn = _session(jobs)
    order = sorted(ssn.jobs.values(), key=cmp_to_key(ssn.job_compare))
    assert [j.name for j in order] == ["high", "mid", "low"]
    tasks = sorted(ssn.jobs["ns/high"].tasks.values(), key=cmp_to_key(ssn.task_compare))
    assert [t.name for t in tasks] == ["h1", "h0", "h2"]  # equal priorities fall back to uid


def test_preemptable_only_lower_priority():
    victims_job = job("v", tasks=[task("v0", status="Running", node="n1")], priority=5, phase="Running")
    equal_job = job("e", tasks=[task("e0", status="Running", node="n1")], priority=10, phase="Running")
    own = job(
        "p",
        tasks=[
            task("p0", priority=7),
            task("p1", priority=3, status="Running", node="n1"),
            task("p2", priority=7, status="Running", node="n1"),
        ],
        priority=10,
    )
    ssn = _session([victims_job, equal_job, own])
    preemptor = own.tasks["ns/p0"]
    cands = [victims_job.tasks["ns/v0"], equal_job.tasks["ns/e0"], own.tasks["ns/p1"], own.tasks["ns/p2"]]
    # other jobs: only strictly lower job priority; own job: only strictly lower task priority
    assert [t.name for t in ssn.preemptable(preemptor, cands)] == ["v0", "p1"]


def test_job_starving_counts_all_tasks():
    full = job(
        "full", tasks=[task("a", status="Running", node="n1"), task("b", status="Pipelined", node="n1")]
    )
    short = job("short", tasks=[task("c", status="Running", node="n1"), task("d")], min_available=1)
    ssn = _session([full, short])
    assert (ssn.job_starving(full), ssn.job_starving(short)) == (False, True)

"""`active_jobs` (actions/util/common.py) memoises the job-valid answers per session and job state:
a second call (backfill after allocate) asks nothing again, a job whose tasks moved is asked
again, and a job set aside meanwhile is left out without asking."""

from __future__ import annotations

from scheduler_core.actions.util.common import active_jobs
from scheduler_core.framework.isolation import JobError
from scheduler_core.framework.session import open_session
from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def test_answers_are_kept_per_session_and_job_state():
    jobs = [job("ok", tasks=[task("ok-0"), task("ok-1")], min_available=2),
            job("short", tasks=[task("short-0")], min_available=2),  # gang: not enough tasks
            job("other", tasks=[task("other-0")]), job("waiting", tasks=[task("w-0")], phase="Pending")]
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=jobs), conf("allocate, backfill", [["gang"]]))
    asked: list[str] = []
    plain = ssn.job_valid
    ssn.job_valid = lambda j: asked.append(j.uid) or plain(j)
    assert [j.uid for j in active_jobs(ssn)] == ["ns/ok", "ns/other"]
    assert asked == ["ns/ok", "ns/short", "ns/other"]
    asked.clear()
    assert [j.uid for j in active_jobs(ssn)] == ["ns/ok", "ns/other"]
    assert asked == []
    # A task of "other" moves (revision bumped): only that job is asked again.
    other = ssn.jobs["ns/other"]
    other.update_task_status(other.tasks["ns/other-0"], TaskStatus.ALLOCATED)
    assert [j.uid for j in active_jobs(ssn, include_pending=True)] == ["ns/ok", "ns/other", "ns/waiting"]
    assert asked == ["ns/other", "ns/waiting"]
    asked.clear()
    ssn.quarantine(ssn.jobs["ns/ok"], JobError("allocate", "ValueError", "boom"))
    assert [j.uid for j in active_jobs(ssn)] == ["ns/other"]
    assert asked == []
    # Another session asks afresh.
    fresh = snapshot(nodes=[node("n1")], jobs=[job("x", tasks=[task("x-0")])])
    ssn2 = open_session(fresh, conf("allocate", [["gang"]]))
    assert [j.uid for j in active_jobs(ssn2)] == ["ns/x"]

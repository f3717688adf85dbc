"""`Session.job_valid` memoises the plugins' job-valid answers per session and job state, and
`active_jobs` (actions/util/common.py) asks through it: a second call (backfill after allocate)
asks the plugins nothing again, a job whose tasks moved is asked again, a job set aside meanwhile
is left out without asking, and `with_pending_tasks` asks only about jobs with a Pending task."""

from __future__ import annotations

from scheduler_core.actions.util.common import active_jobs
from scheduler_core.framework.callbacks import CallbackRegistry
from scheduler_core.framework.isolation import JobError
from scheduler_core.framework.session import open_session
from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import conf, job, node, snapshot, task


def test_answers_are_kept_per_session_and_job_state(monkeypatch):
    jobs = [job("ok", tasks=[task("ok-0"), task("ok-1")], min_available=2),
            job("short", tasks=[task("short-0")], min_available=2),  # gang: not enough tasks
            job("other", tasks=[task("other-0")]), job("waiting", tasks=[task("w-0")], phase="Pending")]
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=jobs), conf("allocate, backfill", [["gang"]]))
    asked: list[str] = []
    plain = CallbackRegistry.job_valid
    monkeypatch.setattr(CallbackRegistry, "job_valid", lambda self, j: asked.append(j.uid) or plain(self, j))
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
    assert asked == ["ns/x"]


def test_with_pending_tasks_asks_only_about_jobs_with_a_pending_task(monkeypatch):
    jobs = [job("run", tasks=[task("run-0", status="Running", node="n1")]),
            job("both", tasks=[task("both-0", status="Running", node="n1"), task("both-1")]),
            job("wait", tasks=[task("wait-0")])]
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=jobs), conf("allocate", [["gang"]]))
    asked: list[str] = []
    plain = CallbackRegistry.job_valid
    monkeypatch.setattr(CallbackRegistry, "job_valid", lambda self, j: asked.append(j.uid) or plain(self, j))
    assert [j.uid for j in active_jobs(ssn, with_pending_tasks=True)] == ["ns/both", "ns/wait"]
    assert asked == ["ns/both", "ns/wait"]
    assert [j.uid for j in active_jobs(ssn)] == ["ns/run", "ns/both", "ns/wait"]
    assert asked == ["ns/both", "ns/wait", "ns/run"]

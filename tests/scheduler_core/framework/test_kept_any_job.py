"""`kept.any_job` (allocate's "some task has inter-pod terms") equals a fresh scan after random
submits, cancels, task additions, removals and replacements, and the kept answer of a job that
did not move is reused, not recomputed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.kept import KeptState, any_job
from scheduler_core.framework.signature import has_inter_pod_terms
from scheduler_core.job_log import JobTable
from scheduler_core.model import JobInfo, TaskStatus
from tests.conftest import profiled
from tests.scheduler_core.builders import job, task

ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def _task(name: str, kind: int):
    if kind == 1:
        return task(name, affinity=ANTI)
    if kind == 2:
        return task(name, topology_spread_constraints=list(SPREAD))
    return task(name)


def _test(j: JobInfo) -> bool:
    return has_inter_pod_terms(j.tasks.values())


ops = st.lists(st.tuples(st.sampled_from(["submit", "cancel", "add", "remove", "replace", "status", "look"]),
                         st.integers(0, 20), st.integers(0, 2)), max_size=25)


@settings(profiled(settings(max_examples=150)))
@given(ops, st.booleans())
def test_the_kept_answer_equals_a_fresh_scan(steps, table):
    # A snapshot's JobTable: the answers follow its change log (scheduler_core.job_log).
    jobs: dict[str, JobInfo] = JobTable() if table else {}
    kept, calls = KeptState(), []

    def counted(j: JobInfo) -> bool:
        calls.append(j.uid)
        return _test(j)

    for seq, (op, i, kind) in enumerate(steps, 1):
        names = list(jobs)
        if op == "submit" or not names:
            j = job(f"j{seq}", tasks=[_task(f"j{seq}-0", kind)])
            jobs[j.uid] = j
        elif op == "cancel":
            jobs.pop(names[i % len(names)])
        else:
            j = jobs[names[i % len(names)]]
            tasks = list(j.tasks.values())
            if op == "add":
                t = _task(f"{j.name}-x{seq}", kind)
                t.namespace, t.uid, t.job_uid = j.namespace, f"{j.namespace}/{t.name}", j.uid
                j.add_task(t)
            elif op == "remove" and tasks:
                j.delete_task(tasks[i % len(tasks)])
            elif op == "status" and tasks:
                t = tasks[i % len(tasks)]
                pending = t.status is TaskStatus.PENDING
                j.update_task_status(t, TaskStatus.RUNNING if pending else TaskStatus.PENDING)
            elif op == "replace" and tasks:
                old = tasks[i % len(tasks)]
                new = _task(old.name, kind)
                new.namespace, new.uid, new.job_uid = old.namespace, old.uid, old.job_uid
                j.replace_task(old, new)
        calls.clear()
        assert any_job(kept, "k", jobs, counted) == any(_test(j) for j in jobs.values())
        calls.clear()
        assert any_job(kept, "k", jobs, counted) == any_job(None, "k", jobs, _test)
        assert calls == []  # nothing moved since the previous call: every answer was kept


def test_the_job_that_said_yes_is_asked_first():
    kept, asked = KeptState(), []

    def counted(j: JobInfo) -> bool:
        asked.append(j.uid)
        return _test(j)

    jobs = {j.uid: j for j in (job("a", tasks=[_task("a-0", 0)]), job("b", tasks=[_task("b-0", 1)]))}
    assert any_job(kept, "k", jobs, counted) and asked == ["ns/a", "ns/b"]
    asked.clear()
    jobs["ns/c"] = job("c", tasks=[_task("c-0", 0)])  # a new job: not looked at while b stands
    assert any_job(kept, "k", jobs, counted) and asked == []
    del jobs["ns/b"]  # the yes is gone: a full pass (c asked, a kept)
    assert not any_job(kept, "k", jobs, counted) and asked == ["ns/c"]

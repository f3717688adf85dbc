"""The snapshot's job change log (scheduler_core.job_log) and the kept figures that follow it
(plugins.util.job_figures): after any random sequence of submits, cancels, completions, task
replacements, job field assignments, jobs taken out and put back, replaced tables and reads,
the tracked JobSums / JobValues equal a fresh build (same queues in the same order, the same
values and scalar dimensions), and a read after no change visits no job."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.job_log import ChangeLog, JobTable, LogReader
from scheduler_core.model import ClusterSnapshot, JobInfo, JobPhase, TaskStatus
from scheduler_core.plugins.util.job_figures import JobSums, JobValues
from scheduler_core.plugins.util.job_follow import Follower
from scheduler_core.plugins.util.queue_attr import job_contribution
from tests.conftest import profiled
from tests.scheduler_core.builders import job, res, task

QUEUES = ["a", "b", "c"]
STATUSES = [TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.ALLOCATED]


def _task(j: JobInfo, name: str, kind: int):
    t = task(name, cpu=str(1 + kind), gpu="1" if kind == 2 else None,
             request={"cpu": "1500.5m", "memory": "1Gi"} if kind == 3 else None)
    t.namespace, t.uid, t.job_uid = j.namespace, f"{j.namespace}/{name}", j.uid
    return t


def _sums_view(sums: dict) -> list:
    return [(q, [(p.milli_cpu, p.memory, sorted(p.scalars.items())) for p in parts])
            for q, parts in sums.items()]


def _apply(snap: ClusterSnapshot, op: tuple, seq: int, out: list[JobInfo]) -> None:
    kind, i, k = op
    jobs = snap.jobs
    names = list(jobs)
    pick = jobs[names[i % len(names)]] if names else None
    if kind == "submit" or pick is None:
        j = job(f"j{seq}", queue=QUEUES[i % 3], phase=JobPhase.PENDING, min_available=1 + k % 2)
        if k % 2:  # tasks before or after the job joins the table
            jobs[j.uid] = j
        for n in range(1 + k % 3):
            j.add_task(_task(j, f"j{seq}-{n}", k))
        jobs[j.uid] = j
    elif kind == "cancel":
        out.append(jobs.pop(pick.uid))
    elif kind == "back" and out:  # a job taken out earlier comes back (now last in order)
        j = out.pop(i % len(out))
        if j.uid not in jobs:
            jobs[j.uid] = j
    elif kind == "status" and pick.tasks:
        t = list(pick.tasks.values())[k % len(pick.tasks)]
        pick.update_task_status(t, STATUSES[i % len(STATUSES)])
    elif kind == "replace" and pick.tasks:
        old = list(pick.tasks.values())[k % len(pick.tasks)]
        pick.replace_task(old, _task(pick, old.name, i % 4))
    elif kind == "remove" and pick.tasks:
        pick.delete_task(list(pick.tasks.values())[k % len(pick.tasks)])
    elif kind == "field":
        which = i % 4
        if which == 0:
            pick.queue = QUEUES[k % 3]
        elif which == 1:
            pick.phase = [JobPhase.PENDING, JobPhase.INQUEUE, JobPhase.RUNNING][k % 3]
        elif which == 2:
            pick.min_available = 1 + k % 3
        else:
            pick.min_resources = res(cpu=str(1 + k)) if k % 2 else None
    elif kind == "renew":  # the same uid, a new job object in its place
        j = job(pick.name, queue=pick.queue, phase=pick.phase)
        j.add_task(_task(j, f"{pick.name}-n{seq}", k))
        jobs[j.uid] = j
    elif kind == "table":  # the whole table replaced (e.g. re-sorted): a new log
        snap.jobs = dict(reversed(list(jobs.items())))


OPS = st.lists(st.tuples(st.sampled_from(["submit", "cancel", "back", "status", "replace", "remove", "field",
                                          "renew", "table", "read", "read"]),
                         st.integers(0, 30), st.integers(0, 3)), max_size=40)


def _followed(values: JobValues, follower: Follower) -> None:
    # A Follower's map stays the values' mapping, key for key in its order, after every call.
    follower.follow(values)
    assert list(follower.map) == list(values.jobs)
    assert all(follower.map[u] is e[2] for u, e in values.jobs.items())


def _check(snap: ClusterSnapshot, sums: JobSums, values: JobValues, follower: Follower) -> None:
    fresh_sums = JobSums().sums(snap.jobs)
    assert _sums_view(sums.sums(snap.jobs)) == _sums_view(fresh_sums)
    got = values.values(snap.jobs)
    _followed(values, follower)
    want = JobValues(job_contribution).values(snap.jobs)
    assert list(got) == list(want) == list(snap.jobs)
    assert all(got[u][0] is want[u][0] and _sums_view({u: got[u][2]}) == _sums_view({u: want[u][2]})
               for u in want)
    # Nothing changed since: no job is looked at again.
    sums.sums(snap.jobs)
    values.values(snap.jobs)
    _followed(values, follower)
    assert (sums.visited, values.visited) == (0, 0) or sums._inexact


@settings(profiled(settings(max_examples=200)))
@given(OPS)
def test_tracked_figures_equal_a_fresh_build_after_any_changes(steps):
    snap = ClusterSnapshot()
    # One pair reads after every step, the other only at "read" steps (changes piled up over
    # several log segments).
    every = (JobSums(track=True), JobValues(job_contribution, track=True), Follower(lambda v: v))
    some = (JobSums(track=True), JobValues(job_contribution, track=True), Follower(lambda v: v))
    out: list[JobInfo] = []
    for seq, op in enumerate(steps, 1):
        if op[0] == "read":
            _check(snap, *some)
        else:
            _apply(snap, op, seq, out)
        _check(snap, *every)


def test_a_read_visits_only_the_changed_jobs():
    snap = ClusterSnapshot()
    for n in range(10):
        j = job(f"j{n}", queue=QUEUES[n % 3])
        snap.jobs[j.uid] = j
        j.add_task(_task(j, f"j{n}-0", 0))
    sums = JobSums(track=True)
    sums.sums(snap.jobs)
    assert sums.visited == 10  # the first read walks everything
    j = snap.jobs["ns/j4"]
    j.update_task_status(next(iter(j.tasks.values())), TaskStatus.RUNNING)
    snap.jobs["ns/j7"].phase = JobPhase.RUNNING
    sums.sums(snap.jobs)
    assert (sums.visited, sums.recomputed) == (2, 2)


def test_a_job_held_by_two_tables_is_checked_at_every_read_of_the_first():
    first, second = JobTable(), JobTable()
    j = job("j", queue="a")
    first[j.uid] = j
    reader = LogReader()
    got, log, pos = reader.changed(first)
    assert got is None  # first read
    reader.commit(log, pos)
    second[j.uid] = j  # now logs to the second table
    j.phase = JobPhase.RUNNING
    got, log, pos = reader.changed(first)
    assert got == {j.uid}
    reader.commit(log, pos)
    assert reader.changed(first)[0] == {j.uid}  # foreign: always reported
    del first[j.uid]
    assert reader.changed(first)[0] == {j.uid}
    assert j._log is second.log


def test_a_reader_too_far_behind_walks_everything():
    log = ChangeLog()
    pos = log.gen
    for n in range(100):
        log.changed.add(str(n))
        log.cut()
    assert log.since(pos) is None
    assert log.since(log.gen) == set()
    log.reset()
    assert log.since(pos) is None


def test_sums_past_two_to_the_53_go_back_to_the_full_walk():
    snap = ClusterSnapshot()
    sums = JobSums(track=True)
    for n in range(3):
        j = job(f"j{n}", queue="a")
        snap.jobs[j.uid] = j
        t = task(f"j{n}-0", cpu="1", memory="4Pi")  # 2**52 bytes each
        t.namespace, t.uid, t.job_uid = j.namespace, f"{j.namespace}/{t.name}", j.uid
        j.add_task(t)
        assert _sums_view(sums.sums(snap.jobs)) == _sums_view(JobSums().sums(snap.jobs))
    assert sums._inexact

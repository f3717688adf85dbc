"""Job isolation: a job whose data is malformed or whose evaluation raises is set aside with
InvalidJob, and every other job is scheduled in the same session as if it were not there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.isolation import JobError, SessionJobError
from scheduler_core.model import TaskStatus
from scheduler_core.scheduler import run_session, run_session_isolated
from tests.scheduler_core.builders import conf, job, node, queue, replicas, run, snapshot, task
from tests.scheduler_core.listed import listed

POISON_AFFINITIES = [
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": "x"}]}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In", "values": 5}]}]}}},
    {"nodeAffinity": [1]},
    [1],
    "x",
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}},
]
DEFAULT_ACTIONS = "enqueue, allocate, backfill"


def _cluster(poison_task):
    return snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
        job("good", queue="q", tasks=[task("g0", cpu="1"), task("g1", cpu=None, memory=None)]),
        job("bad", queue="q", tasks=[poison_task])])


@pytest.mark.parametrize("cpu", [None, "1"], ids=["best-effort", "with-request"])
@pytest.mark.parametrize("affinity", POISON_AFFINITIES, ids=range(len(POISON_AFFINITIES)))
def test_malformed_affinity_is_set_aside_and_healthy_jobs_bind(affinity, cpu) -> None:
    """Issue 15 finding 1: the poison job no longer stops allocate or backfill for everybody."""
    result = run(_cluster(task("b0", cpu=cpu, memory=None, affinity=affinity)))
    assert result.binds == {"ns/g0": "n1", "ns/g1": "n1"}
    reason = result.reasons["ns/bad"]
    assert reason.code is ReasonCode.InvalidJob
    assert reason.message.startswith("job is invalid: affinity")
    assert result.job_errors["ns/bad"]["where"] == "screen"
    assert result.job_errors["ns/bad"]["field"].startswith("affinity")
    assert "ns/good" not in result.reasons


def test_running_task_of_a_malformed_job_keeps_its_resources() -> None:
    """A set-aside job's task that holds a node still occupies it (3 of 4 cpu)."""
    bad = job("bad", queue="q", phase="Running", tasks=[
        task("b0", cpu="3", status=TaskStatus.RUNNING, node="n1", affinity={"podAntiAffinity": [1]}),
        task("b1", cpu="1", affinity={"podAntiAffinity": [1]})])
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
        bad, job("good", queue="q", tasks=replicas("g", 2, cpu="1"))])
    result = run(snap, conf(DEFAULT_ACTIONS, [["priority", "gang"], ["predicates", "proportion"]]))
    assert result.binds == {"ns/g-0": "n1"}  # one cpu left, not two
    assert result.reasons["ns/bad"].code is ReasonCode.InvalidJob
    assert result.reasons["ns/good"].code is not ReasonCode.InvalidJob


# -- the guard: evaluation that raises inside an action -------------------------------------------
class Boom(RuntimeError):
    """What the test plugin raises."""


@pytest.fixture
def raiser() -> Iterator[dict]:
    """A plugin `raiser` whose callbacks raise for jobs named `bad` at a chosen extension point."""
    where: dict = {"point": "predicate"}

    class Raiser(Plugin):
        name = "raiser"

        def on_session_open(self, ssn) -> None:  # noqa: ANN001 - test plugin
            def bad(t) -> bool:  # noqa: ANN001
                return ssn.jobs[t.job_uid].name == "bad"

            def predicate(t, table):  # noqa: ANN001, ANN202
                if where["point"] == "predicate" and bad(t):
                    raise Boom("predicate exploded")
                return []

            def enqueueable(j) -> int:  # noqa: ANN001
                if where["point"] == "enqueue" and j.name == "bad":
                    raise Boom("enqueueable exploded")
                return 0

            ssn.add_predicate_fn(self.name, predicate)
            ssn.add_job_enqueueable_fn(self.name, enqueueable)

    with listed(Raiser, Raiser2):
        yield where


def _guard_conf(actions: str):
    return conf(actions, [["priority", "gang", "conformance"],
                          ["raiser", "predicates", "proportion", "nodeorder"]])


@pytest.mark.parametrize("best_effort", [False, True], ids=["allocate", "backfill"])
def test_guard_sets_aside_a_job_whose_predicate_raises(raiser, best_effort) -> None:
    cpu = None if best_effort else "1"
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
        job("bad", queue="q", created=1.0, tasks=replicas("b", 2, cpu=cpu, memory=None)),
        job("good", queue="q", created=2.0, tasks=replicas("g", 2, cpu="1"))])
    result = run(snap, _guard_conf(DEFAULT_ACTIONS))
    assert result.binds == {"ns/g-0": "n1", "ns/g-1": "n1"}
    error = result.job_errors["ns/bad"]
    assert error == {"where": "backfill" if best_effort else "allocate", "error": "Boom",
                     "message": "predicate exploded", "field": ""}
    assert result.reasons["ns/bad"].code is ReasonCode.InvalidJob
    assert "Boom: predicate exploded" in result.reasons["ns/bad"].message


def test_guard_in_enqueue(raiser) -> None:
    raiser["point"] = "enqueue"
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
        job("bad", queue="q", phase="Pending", min_resources={"cpu": "1"}, tasks=replicas("b", 1)),
        job("good", queue="q", phase="Pending", min_resources={"cpu": "1"}, tasks=replicas("g", 1))])
    result = run(snap, _guard_conf(DEFAULT_ACTIONS))
    assert result.binds == {"ns/g-0": "n1"}
    assert result.job_phase["ns/bad"] == "Pending"
    assert result.job_errors["ns/bad"]["where"] == "enqueue"


@pytest.mark.parametrize(("action", "seen_by"), [("preempt", "preempt"), ("reclaim", "allocate")])
def test_guard_in_preempt_and_reclaim_undoes_the_job_and_goes_on(raiser, action, seen_by) -> None:
    """The failing preemptor's statement is discarded; the healthy one evicts and is pipelined.

    With preempt the queue is full of its own work, so allocate refuses both jobs on quota
    before asking any predicate: preempt is the first to evaluate the bad job."""
    same_queue = action == "preempt"
    victims = job("low", queue="qv" if not same_queue else "q", phase="Running", priority=0, tasks=[
        task("v0", cpu="2", status=TaskStatus.RUNNING, node="n1"),
        task("v1", cpu="2", status=TaskStatus.RUNNING, node="n2")])
    queues = [queue("q"), queue("qv")]
    snap = snapshot(nodes=[node("n1", cpu="2"), node("n2", cpu="2")], queues=queues, jobs=[
        victims,
        job("bad", queue="q", priority=10, created=1.0, tasks=replicas("b", 1, cpu="2")),
        job("good", queue="q", priority=10, created=2.0, tasks=replicas("g", 1, cpu="2"))])
    raiser["point"] = "predicate"
    result = run(snap, conf(f"enqueue, allocate, {action}",
                            [["priority", "gang", "conformance"], ["raiser", "predicates", "proportion"]]))
    assert result.job_errors["ns/bad"]["where"] == seen_by
    assert result.pipelined == {"ns/g-0": "n1"}
    assert result.evictions == ["ns/v0"]


def test_undo_failure_reruns_the_session_without_the_job(raiser, monkeypatch) -> None:
    """When discarding a failed job's work raises too, the session restarts with the job aside."""
    from scheduler_core.framework import statement

    real = statement.Statement.discard
    calls = {"n": 0}

    def flaky_discard(self) -> None:  # noqa: ANN001
        if any(op.task.job_uid == "ns/bad" for op in self.operations):
            calls["n"] += 1
            raise Boom("discard exploded")
        real(self)

    monkeypatch.setattr(statement.Statement, "discard", flaky_discard)
    raiser["point"] = "predicate"

    def build():  # noqa: ANN202
        # b0 is placed first, in the statement that b1's failure must discard (a gang of 2).
        bad = job("bad", queue="q", created=1.0, min_available=2,
                  tasks=[task("b0", cpu="1"), task("b1", cpu="2")])
        return snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
            bad, job("good", queue="q", created=2.0, tasks=replicas("g", 1, cpu="1"))])

    with pytest.raises(SessionJobError):
        run_session(build(), _raise_on_second_task_conf())
    snap, result = run_session_isolated(build, _raise_on_second_task_conf())
    assert calls["n"] >= 1
    assert result.binds == {"ns/g-0": "n1"}
    assert result.reasons["ns/bad"].code is ReasonCode.InvalidJob
    assert "ns/b0" not in snap.jobs["ns/bad"].tasks  # its waiting tasks were taken out


def test_placements_of_earlier_rounds_are_taken_back(raiser) -> None:
    """b0 is committed in the job's first round (min 1); b1 raises in the next: b0 is unplaced."""
    bad = job("bad", queue="q", created=1.0, tasks=[task("b0", cpu="1"), task("b1", cpu="2")])
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q")], jobs=[
        bad, job("good", queue="q", created=2.0, tasks=replicas("g", 1, cpu="1"))])
    result = run(snap, _raise_on_second_task_conf())
    assert result.binds == {"ns/g-0": "n1"}
    assert snap.nodes["n1"].idle.milli_cpu == 3000  # b0's cpu came back
    assert result.queues["q"].allocated.milli_cpu == 1000


class Raiser2(Plugin):
    """Raises in the predicate of task b1 (listed by the `raiser` fixture)."""

    name = "raiser2"

    def on_session_open(self, ssn) -> None:  # noqa: ANN001 - test plugin
        def predicate(t, table):  # noqa: ANN001, ANN202
            if t.name == "b1":
                raise Boom("second task exploded")
            return []

        ssn.add_predicate_fn(self.name, predicate)


def _raise_on_second_task_conf():
    return conf(DEFAULT_ACTIONS, [["priority", "gang"], ["raiser2", "predicates", "proportion"]])


def test_job_error_message_is_bounded_and_renderable() -> None:
    from scheduler_core.framework.isolation import error_of

    err = error_of(ValueError("\ud800" + "x" * 1000), "allocate")
    assert isinstance(err, JobError)
    assert len(err.message) <= 303
    err.reason_message().encode("utf-8")  # no lone surrogate survives


def test_screen_checks_amounts_and_durations_of_tasks_sharing_spec_objects() -> None:
    """Tasks of a job share decoded spec objects; a bad duration on the second is still found."""
    labels = {"app": "x"}
    good = task("t0", cpu="1", labels=labels, duration=10.0)
    bad = task("t1", cpu="1", labels=labels, duration=float("inf"))
    snap = snapshot(nodes=[node("n1")], queues=[queue("q")], jobs=[job("j", queue="q", tasks=[good, bad])])
    result = run(snap)
    assert result.job_errors["ns/j"]["field"] == "duration"
    assert result.reasons["ns/j"].code is ReasonCode.InvalidJob



def test_a_kept_screen_finds_what_a_walk_finds() -> None:
    """On a kept snapshot the screen looks only at the jobs the job table's change log names and
    at those it set aside last time; session by session it sets aside what a walk over every job
    (kept=False) sets aside: a malformed task that holds a node, one added to a screened job, one
    replacing a screened task."""
    from scheduler_core.bench.kept_cluster import settle
    from scheduler_core.framework.kept import kept_state

    def cluster():  # noqa: ANN202
        return snapshot(nodes=[node("n1", cpu="8")], queues=[queue("q")], jobs=[
            job("held", queue="q", phase="Running", tasks=[
                task("h0", cpu="1", status=TaskStatus.RUNNING, node="n1", affinity={"podAntiAffinity": [1]}),
                task("h1", cpu="1", affinity={"podAntiAffinity": [1]})]),
            job("good", queue="q", tasks=replicas("g", 2, cpu="1")),
            job("other", queue="q", tasks=replicas("o", 2, cpu="9"))])

    kept, walked = cluster(), cluster()
    kept_state(kept).lasting = True
    errors = []
    for step in range(4):
        for snap in (kept, walked):
            if step == 2:  # a malformed task joins the screened job `good`
                snap.jobs["ns/good"].add_task(task("g-bad", cpu="1", affinity="x"))
            if step == 3:  # a screened waiting task is replaced by a malformed one
                other = snap.jobs["ns/other"]
                other.replace_task(other.tasks["ns/o-0"], task("o-0", cpu="9", duration=float("inf")))
        got = run_session(kept)
        want = run_session(walked, kept=False)
        assert got.job_errors == want.job_errors, step
        errors.append(sorted(got.job_errors))
        settle(kept)
        settle(walked)
    assert errors == [["ns/held"], [], ["ns/good"], ["ns/other"]]

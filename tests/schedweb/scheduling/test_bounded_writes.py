"""The write phase's bounded passes give what the full passes give (job_changes, job_conditions).

A cycle on the kept snapshot compares again only the jobs whose row the delta moved, whose phase
entry or Reason object changed, or that it found a change for last cycle; the full pass compares
every job. Both run on every cycle of seeded random mixes of cycles and outside writes (submits,
cancels, suspends, deletes, task reports, agent steps, node and queue edits, a job row's phase
or reason written by someone else) and must agree exactly; a pure version drives job_changes
through a row log the test keeps itself, over many more cycles.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.result import Reason, SessionResult
from schedweb.core import services
from schedweb.core.job_services import job_cancel, job_delete, job_resume, job_suspend
from schedweb.core.models import Job, JobPhase, Node, Queue
from schedweb.scheduling import cycle, incremental, job_changes, job_conditions
from schedweb.scheduling.adapter import JobRow, LoadedState
from schedweb.scheduling.row_log import JobRowLog

from .conftest import agent_tick, make_cluster, report_task, requires_postgres, submit
from .test_job_changes import PHASES, _new_reason, _reference, row

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


# -- pure: job_changes through a row log kept by the test ----------------------------------------------
def _chain(rng: random.Random) -> list[dict]:
    """A rendered queue chain: its figures move from cycle to cycle, its names seldom."""
    leaf = rng.choice(["q", "q", "r"])
    return [{"queue": "root", "headroom_of": "capability", "deserved": {"cpu": rng.randint(1, 3) * 1000.0}},
            {"queue": leaf, "headroom_of": rng.choice(["capability", "capability", "deserved"]),
             "allocated": {"cpu": rng.randint(0, 2) * 500.0}}]


def _renewed(rng: random.Random, old: object) -> object:
    """What scheduler_core hands back when it renders a job's reason again: mostly the same
    words in a new object, its chain's figures moved; sometimes new words."""
    if not isinstance(old, Reason) or rng.random() < 0.3:
        return _new_reason(rng)
    details = dict(old.details)
    if "queue_chain" in details:
        details["queue_chain"] = _chain(rng)
    if rng.random() < 0.2 and all(isinstance(key, str) for key in details):
        details["insufficient"] = {"cpu": rng.randint(1, 2)}
    message = old.message if rng.random() < 0.8 else f"{old.message}!"
    return Reason(old.code, message, details)


def _cycles(seed: int, cycles: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Random cycles over 60 jobs, the bounded pass against the plain comparison of every job;
    returns (cycles compared bounded, jobs visited by those)."""
    import weakref

    rng = random.Random(seed)
    rows = {f"ns/j{i}": row(i, rng.choice(PHASES)) for i in range(60)}
    state = LoadedState(snapshot=None, jobs=rows, full=False)  # type: ignore[arg-type]
    log = JobRowLog(rows)
    monkeypatch.setattr(incremental, "row_log", lambda s: log if s is state else None)
    memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    reasons: dict[str, object] = {}
    phases = {uid: r.phase for uid, r in rows.items()}
    now, bounded, visited, serial = T0, 0, 0, 0
    for n in range(cycles):
        now += timedelta(seconds=2)
        for uid in rows:  # the session: most reasons and phases as last cycle's, some new or gone
            pick = rng.random()
            if pick < 0.05:
                reasons.pop(uid, None)
            elif pick < 0.12 or (uid not in reasons and pick < 0.3):
                reasons[uid] = _new_reason(rng)
            elif pick < 0.4 and uid in reasons:
                reasons[uid] = _renewed(rng, reasons[uid])
            elif isinstance(reasons.get(uid), dict) and rng.random() < 0.5:
                reasons[uid]["message"] = f"moved {rng.randint(0, 1)}"  # type: ignore[index]
            if rng.random() < 0.1:
                phases[uid] = rng.choice(PHASES)
            elif rng.random() < 0.03:
                phases.pop(uid, None)
        result = SessionResult(job_phase=dict(phases), reasons=dict(reasons))
        kept = log.memo.get(job_changes.MEMO_KEY)
        if kept is not None and kept.gen == log.gen - 1:
            bounded += 1
        got = job_changes.job_changes(state, result, now)
        want = _reference(state, result, now, memo)
        assert (got[0], got[1], sorted(got[2])) == (want[0], want[1], sorted(want[2])), (seed, n)
        if rng.random() < 0.05:
            continue  # a cycle whose pass ran but whose load is not followed by one: a full pass next
        log.begin()
        for change in got[0]:  # the writes, as the next delta applies them (some conflict)
            if rng.random() < 0.9:
                uid = next(u for u, r in rows.items() if r.id == change.id)
                rows[uid] = JobRow(change.id, change.phase, change.code, change.message, change.details,
                                   change.since, "volcano")
                log.own.add(uid)  # applied from memory (incremental.own_jobs)
        for uid in rng.sample(sorted(rows), 2):  # others' writes
            old = rows[uid]
            rows[uid] = row(old.id, rng.choice(PHASES), rng.choice([old.reason_code, "", "NodeFit"]),
                            old.reason_message, dict(old.reason_details), old.reason_since)
            log.moved.add(uid)
        if rng.random() < 0.3:  # a job goes, another comes (sometimes under the gone one's name)
            gone = rng.choice(sorted(rows))
            del rows[gone]
            log.dropped(gone)
            serial += 1
            uid = gone if rng.random() < 0.3 else f"ns/n{serial}"
            rows[uid] = row(1000 + serial, rng.choice(PHASES))
            log.added(uid)
        visited += len(log.moved)
    return bounded, visited


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_bounded_job_changes_equal_the_full_comparison(seed, monkeypatch):
    bounded, _ = _cycles(seed, 30, monkeypatch)
    assert bounded >= 15  # most cycles took the bounded pass


# -- PostgreSQL: real cycles, both passes on each ---------------------------------------------------------
class Checked:
    """Wraps the cycle's two passes: each runs as the cycle runs it and on a copy of the state
    (no row log: every job compared), and the answers must be equal."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bounded = {"changes": 0, "conditions": 0}
        self.cycles = 0
        real_changes, real_conditions = job_changes.job_changes, job_conditions.changed

        def changes(state: LoadedState, result: SessionResult, now: datetime):  # type: ignore[no-untyped-def]
            self.cycles += 1
            self.bounded["changes"] += self._kept(state, job_changes.MEMO_KEY)
            log = incremental.row_log(state)
            if log is not None:  # the log places every job where the dict has it
                assert sorted(state.jobs, key=log.order.__getitem__) == list(state.jobs)
                assert log.order.keys() == state.jobs.keys()
            got = real_changes(state, result, now)
            want = real_changes(replace(state), result, now)
            assert (got[0], got[1], sorted(got[2])) == (want[0], want[1], sorted(want[2]))
            return got

        def conditions(state: LoadedState, result: SessionResult):  # type: ignore[no-untyped-def]
            self.bounded["conditions"] += self._kept(state, job_conditions.MEMO_KEY)
            got = real_conditions(state, result)
            assert got == real_conditions(replace(state, full=False), result)
            return got

        monkeypatch.setattr(job_changes, "job_changes", changes)
        monkeypatch.setattr(job_conditions, "changed", conditions)

    @staticmethod
    def _kept(state: LoadedState, key: str) -> bool:
        log = incremental.row_log(state)
        memo = log.memo.get(key) if log is not None else None
        return memo is not None and memo.gen == log.gen - 1  # type: ignore[union-attr]


class World:
    """The committed changes the examples draw from (names stay unique across examples)."""

    jobs = 0
    clock = timezone.now()

    @classmethod
    def ensure(cls) -> None:
        if not Queue.objects.filter(name="q").exists():
            make_cluster(nodes=3, cpu="4")
            services.queue_create(name="capped", capability={"cpu": "3"})

    @classmethod
    def step(cls, op: str, pick: int) -> None:
        jobs = list(Job.objects.exclude(phase__in=[JobPhase.CANCELLED, JobPhase.COMPLETED])
                    .order_by("id").values_list("id", flat=True))
        job = Job.objects.get(pk=jobs[pick % len(jobs)]) if jobs else None
        if op == "submit":
            cls.jobs += 1
            submit(f"w{cls.jobs}", tasks=1 + pick % 3, cpu=("1", "2", "9")[pick % 3],
                   queue=("q", "capped")[pick % 2], duration=(None, 5)[pick % 2])
        elif op == "cycle":
            run = cycle.cycle_run()
            assert not run.errors and not run.skipped, run.errors
        elif job is None:
            return
        elif op == "cancel":
            job_cancel(job=job)
        elif op == "suspend":
            (job_resume if job.phase == JobPhase.ABORTED else job_suspend)(job=job)
        elif op == "delete":
            done = list(Job.objects.filter(phase=JobPhase.CANCELLED).order_by("id"))
            if done:
                job_delete(job=done[pick % len(done)])
        elif op == "resubmit":  # deleted by another writer and submitted again: a new row, the same uid
            name, queue = job.name, job.queue.name
            Job.objects.filter(pk=job.pk).delete()
            submit(name, tasks=1 + pick % 2, cpu="1", queue=queue)
        elif op == "reason":  # someone else writes the row a cycle wrote: a conflict or a rewrite
            Job.objects.filter(pk=job.pk).update(reason_message=f"edited {pick}", reason_details={"by": "x"})
        elif op == "phase":
            Job.objects.filter(pk=job.pk).update(phase=(JobPhase.PENDING, JobPhase.INQUEUE)[pick % 2])
        elif op == "report":
            report_task(pick)
        elif op == "agent":
            cls.clock = agent_tick(cls.clock)
        elif op == "node":
            node = Node.objects.order_by("id")[pick % 3]
            services.node_update(node=node, unschedulable=not node.unschedulable)
        elif op == "queue":
            services.queue_update(queue=Queue.objects.get(name="capped"),
                                  capability={"cpu": ("2", "3", "6")[pick % 3]})


OPS = ("submit", "submit", "cycle", "cycle", "cycle", "cancel", "suspend", "delete", "resubmit", "reason",
       "phase", "report", "agent", "agent", "node", "queue")


@pytest.mark.django_db(transaction=True)
@requires_postgres
@pytest.mark.usefixtures("fresh_shard_caches")
@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 999)), min_size=1, max_size=10))
def test_the_cycle_bounded_passes_equal_the_full_ones_through_random_writes(steps, monkeypatch):
    checked = Checked(monkeypatch)
    World.ensure()
    for op, pick in [*steps, ("cycle", 0)]:
        with contextlib.suppress(ValidationError):  # refused by the services: nothing written
            World.step(op, pick)
    assert checked.cycles >= 1


@pytest.mark.django_db(transaction=True)
@requires_postgres
@pytest.mark.usefixtures("fresh_shard_caches")
def test_a_seeded_mix_mostly_takes_the_bounded_passes(monkeypatch, settings):
    settings.SCHEDULER_FULL_RELOAD_EVERY = 10**9
    checked = Checked(monkeypatch)
    World.ensure()
    rng = random.Random(27)
    for _ in range(25):
        World.step("submit", rng.randrange(1000))
    for _ in range(80):
        with contextlib.suppress(ValidationError):
            World.step(rng.choice(OPS), rng.randrange(1000))
    World.step("cycle", 0)
    assert checked.cycles >= 10
    # The first cycle is a full load; others' cycles never ran here: the rest are bounded.
    assert checked.bounded["changes"] >= checked.cycles - 2
    assert checked.bounded["conditions"] >= checked.cycles - 2

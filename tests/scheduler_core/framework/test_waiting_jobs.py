"""framework.waiting_jobs: the index of jobs with waiting tasks, kept from the job table's change
log, equals a walk of every job after any mix of changes and sessions."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.framework.kept import kept_state
from scheduler_core.framework.waiting_jobs import waiting_jobs
from scheduler_core.model import JobPhase, TaskStatus
from scheduler_core.scheduler import run_session
from tests.scheduler_core.explain.test_job_entries import OPS, _apply
from tests.scheduler_core.explain.test_reasons_never_fits_property import CONFS, build, clusters


def _walk(snap) -> tuple[set[str], set[str], set[str]]:  # noqa: ANN001
    pending = {uid for uid, j in snap.jobs.items() if j.task_status_index.get(TaskStatus.PENDING)}
    unbound = {uid for uid, j in snap.jobs.items()
               if any(j.task_status_index.get(s) for s in (TaskStatus.PENDING, TaskStatus.PIPELINED,
                                                            TaskStatus.ALLOCATED))}
    return pending, unbound, {uid for uid, j in snap.jobs.items() if j.phase is JobPhase.PENDING}


def _index(snap):  # noqa: ANN001, ANN202
    ssn = SimpleNamespace(jobs=snap.jobs, own_jobs=snap.jobs, shard=SimpleNamespace(foreign=frozenset()),
                          kept=kept_state(snap))
    return waiting_jobs(ssn), ssn


@settings(max_examples=60, deadline=None)
@given(spec=clusters(), which=st.sampled_from(sorted(CONFS)),
       changes=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 11)), min_size=2, max_size=8))
def test_the_kept_index_equals_a_walk_after_any_changes(spec, which, changes):
    snap = build(spec)
    kept_state(snap).lasting = True
    for step, (op, pick) in enumerate([("nothing", 0), *changes]):
        _apply(snap, op, pick, step)
        index, ssn = _index(snap)  # before the session (the loader's changes)
        assert (index.pending, index.unbound, index.admission) == _walk(snap), (step, op)
        run_session(snap, CONFS[which])
        index, ssn = _index(snap)  # after it: placements, phases
        assert (index.pending, index.unbound, index.admission) == _walk(snap), (step, op)
        in_order = [j.uid for j in index.in_order(ssn, index.unbound)]
        assert in_order == [u for u in snap.jobs if u in index.unbound]
        settle(snap)

"""Property of job routing (framework.sharding, `foreign_jobs`) over random small clusters: a job
another scheduler instance answers to is never enqueued, placed (bound, pipelined) or evicted,
gets no phase, reason or condition, whatever the actions and mode; and with the foreign jobs
removed from the snapshot instead, no session decides for them either (the routing only hides
them from the actions: their tasks still count on nodes and in queues)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.sharding import Sharding
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.actions.test_sharding_property import TIERS, _cluster, job_spec, node_spec
from tests.scheduler_core.builders import conf

ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"


@settings(profiled(settings(max_examples=60)))
@given(st.lists(node_spec, min_size=1, max_size=5), st.data(), st.lists(job_spec, min_size=1, max_size=4),
       st.sampled_from(sorted(TIERS)), st.sampled_from(["none", "hard", "soft"]), st.booleans())
def test_a_foreign_job_is_never_placed_or_evicted(nodes, data, waiting, tiers, mode, topology):
    snap = _cluster(nodes, (), waiting)
    uids = sorted(snap.jobs)
    foreign = data.draw(st.sets(st.sampled_from(uids)), label="foreign")
    names = sorted(snap.nodes)
    shard = data.draw(st.sets(st.sampled_from(names)), label="shard")
    phases = {uid: snap.jobs[uid].phase for uid in foreign}
    job_of = {t.uid: j.uid for j in snap.jobs.values() for t in j.tasks.values()}
    cfg = conf(ACTIONS, TIERS[tiers], preempt={"enableTopologyAwarePreemption": topology})
    sharding = Sharding(mode, "s", frozenset(shard), "sched-a", frozenset(foreign))
    result = run_session(snap, cfg, sharding=sharding)
    touched = {job_of[uid] for uid in [*result.binds, *result.pipelined, *result.evictions]}
    assert not touched & foreign, (touched, foreign)
    assert not set(result.job_phase) & foreign
    assert not set(result.reasons) & foreign
    assert not set(result.conditions) & foreign
    for uid, phase in phases.items():  # not enqueued, not moved on
        assert snap.jobs[uid].phase is phase, uid

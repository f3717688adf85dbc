"""The close's kept per-job answers (framework.close_phases, the gang close) look only at the jobs
the job table's change log names: an unchanged cluster recomputes no job, a submitted one is the
only one looked at, and the answers stay those of a close that walks every job."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.framework import close_phases
from scheduler_core.framework.conf import DEFAULT_CONF_YAML, parse_conf
from scheduler_core.framework.kept import kept_state
from scheduler_core.framework.sharding import Sharding
from scheduler_core.plugins.gang import gang
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, replicas, snapshot, task

CONF = parse_conf(DEFAULT_CONF_YAML)


def _spy(monkeypatch) -> tuple[list[str], list[str]]:
    phased: list[str] = []
    closed: list[str] = []
    plain_phase, plain_close = close_phases.final_phase, gang._Close.__init__

    def phase(j, placed_here):
        phased.append(j.uid)
        return plain_phase(j, placed_here)

    def close(self, j, plugin):
        closed.append(j.uid)
        plain_close(self, j, plugin)

    monkeypatch.setattr(close_phases, "final_phase", phase)
    monkeypatch.setattr(gang._Close, "__init__", close)
    return phased, closed


def test_an_unchanged_cluster_looks_at_no_job(monkeypatch):
    # Two jobs that fit and one gang too big for the cluster (it waits for ever).
    snap = snapshot(nodes=[node("n1", cpu="4")], jobs=[
        job("a", tasks=replicas("a", 1, cpu="1"), phase="Pending"),
        job("b", tasks=replicas("b", 1, cpu="1"), phase="Pending"),
        job("big", tasks=replicas("big", 3, cpu="2"), min_available=3, phase="Pending")])
    kept_state(snap).lasting = True
    phased, closed = _spy(monkeypatch)
    phases = []
    for _ in range(4):
        phased.clear()
        closed.clear()
        result = run_session(snap, CONF)
        settle(snap)
        phases.append((sorted(phased), sorted(closed), dict(sorted(result.job_phase.items()))))
    # First close: every job. Second: a and b (bound last time, Running now) and big. Then only
    # big, whose tasks allocate places and takes back every session (each move bumps its
    # revision): a and b are not looked at again.
    every, moved, tried = ["ns/a", "ns/b", "ns/big"], ["ns/a", "ns/b", "ns/big"], ["ns/big"]
    assert [p[0] for p in phases] == [every, moved, tried, tried]
    assert [p[1] for p in phases] == [every, moved, tried, tried]
    assert phases[-1][2] == {"ns/a": "Running", "ns/b": "Running", "ns/big": "Inqueue"}
    conditions = run_session(snap, CONF).conditions
    assert {uid: c.type for uid, c in conditions.items()} == {
        "ns/a": "Scheduled", "ns/b": "Scheduled", "ns/big": "Unschedulable"}
    settle(snap)
    # A new job is the only one looked at; a job gone leaves the answers.
    phased.clear()
    closed.clear()
    new = job("c", tasks=replicas("c", 1, cpu="1"), phase="Pending")
    snap.jobs[new.uid] = new
    for t in list(new.tasks.values()):
        new.tasks.pop(t.uid)
        snap.add_task(t)
    del snap.jobs["ns/big"]
    result = run_session(snap, CONF)
    assert sorted(phased) == ["ns/c"] and sorted(closed) == ["ns/c"]  # (big is gone, a and b still)
    assert dict(sorted(result.job_phase.items())) == {"ns/a": "Running", "ns/b": "Running", "ns/c": "Inqueue"}
    assert sorted(result.conditions) == ["ns/a", "ns/b", "ns/c"]


def test_a_sharded_instance_follows_the_log_and_its_foreign_jobs(monkeypatch):
    # r runs already (no action touches it): only the foreign set's difference says it is ours.
    snap = snapshot(nodes=[node("n1", cpu="8")], jobs=[
        job("a", tasks=replicas("a", 1, cpu="1"), phase="Pending"),
        job("r", tasks=[task("r-0", cpu="1", status="Running", node="n1")], phase="Running")])
    kept_state(snap).lasting = True
    phased, closed = _spy(monkeypatch)
    seen = []
    for foreign in ({"ns/r"}, set(), set(), {"ns/a"}):
        phased.clear()
        closed.clear()
        result = run_session(snap, CONF, sharding=Sharding(foreign_jobs=frozenset(foreign)))
        settle(snap)
        seen.append((sorted(phased), sorted(closed), dict(sorted(result.job_phase.items())),
                     sorted(result.conditions)))
    # 1: a alone (r is another instance's). 2: r is ours now, a ran meanwhile. 3: nothing moved.
    # 4: a is another instance's: dropped without a look.
    assert [s[0] for s in seen] == [["ns/a"], ["ns/a", "ns/r"], [], []]
    assert [s[1] for s in seen] == [["ns/a"], ["ns/a", "ns/r"], [], []]
    assert [s[2] for s in seen] == [{"ns/a": "Inqueue"}, {"ns/a": "Running", "ns/r": "Running"},
                                    {"ns/a": "Running", "ns/r": "Running"}, {"ns/r": "Running"}]
    assert [s[3] for s in seen] == [["ns/a"], ["ns/a", "ns/r"], ["ns/a", "ns/r"], ["ns/r"]]


def _jobs_cluster():
    snap = snapshot(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], jobs=[
        job("a", tasks=replicas("a", 2, cpu="1"), phase="Pending"),
        job("b", tasks=replicas("b", 3, cpu="2"), min_available=3, phase="Pending"),
        job("c", tasks=replicas("c", 1, cpu="3"), phase="Pending"),
        job("d", tasks=[task("d-0", cpu="1", status="Running", node="n2")], phase="Running")])
    return snap


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sets(st.sampled_from(["ns/a", "ns/b", "ns/c", "ns/d"])), min_size=1, max_size=8))
def test_kept_closes_of_a_sharded_instance_equal_fresh_ones(foreigns):
    kept, fresh = _jobs_cluster(), _jobs_cluster()
    kept_state(kept).lasting = True
    for foreign in foreigns:
        sharding = Sharding(foreign_jobs=frozenset(foreign))
        ours = run_session(kept, CONF, sharding=sharding)
        theirs = run_session(fresh, CONF, sharding=sharding, kept=False)
        settle(kept)
        settle(fresh)
        assert dict(sorted(ours.job_phase.items())) == dict(sorted(theirs.job_phase.items()))
        assert {u: c.to_json() for u, c in ours.conditions.items()} == \
            {u: c.to_json() for u, c in theirs.conditions.items()}

"""The close's kept per-job answers (framework.close_phases, the gang close) look only at the jobs
the job table's change log names: an unchanged cluster recomputes no job, a submitted one is the
only one looked at, and the answers stay those of a close that walks every job."""

from __future__ import annotations

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.framework import close_phases
from scheduler_core.framework.conf import DEFAULT_CONF_YAML, parse_conf
from scheduler_core.framework.kept import kept_state
from scheduler_core.plugins.gang import gang
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, replicas, snapshot

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

"""job_entries: on a kept snapshot, what the close keeps per job (reasons, NeverFits answers, memo
key parts, phases, gang close) gives exactly what a fresh close gives, after any mix of changes.

Two copies of one small generated cluster run in lockstep: `kept` closes with everything kept
across sessions, `fresh` with nothing kept (run_session(kept=False), every reason rendered job by
job). Between sessions both get the same random changes: submits, cancels, completions, node
changes (in place and replaced), queue figure changes, or nothing. Every result must match.
"""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bench.kept_cluster import settle
from scheduler_core.explain import job_entries, reason_memo
from scheduler_core.framework.kept import kept_state
from scheduler_core.model import ClusterSnapshot, TaskStatus
from scheduler_core.resources import Resource
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, replicas, task
from tests.scheduler_core.explain.test_reasons_never_fits_property import CONFS, TAINT, build, clusters

OPS = ("submit", "submit-pending", "cancel", "complete", "resize", "min-available", "node-labels",
       "node-labels-in-place", "node-cpu", "node-unschedulable", "node-taint", "queue-capability",
       "queue-weight", "queue-close", "nothing")


def _result(snap: ClusterSnapshot, cfg, kept: bool) -> str:
    before = reason_memo.enabled
    reason_memo.enabled = kept  # the fresh copy: every reason rendered job by job
    try:
        result = run_session(snap, cfg, kept=None if kept else False)
    finally:
        reason_memo.enabled = before
    data = result.to_json()
    data.pop("timing", None)
    return json.dumps(data, sort_keys=True, default=str)


def _apply(snap: ClusterSnapshot, op: str, pick: int, step: int) -> None:
    """One change, the same on either copy (`pick` chooses among the candidates)."""
    jobs = sorted(snap.jobs)
    nodes = sorted(snap.nodes)
    queue_names = sorted(q for q in snap.queues if q != "root")
    if op in ("submit", "submit-pending"):
        name = f"s{step}"
        tasks = replicas(f"{name}w", 1 + pick % 3, cpu=["1", "2", "8"][pick % 3])
        snap.jobs[f"ns/{name}"] = _indexed(job(name, queue_names[pick % len(queue_names)], tasks,
                                               min_available=1 + pick % 2 if len(tasks) > 1 else 1,
                                               phase="Pending" if op == "submit-pending" else "Inqueue"))
    elif op == "resize":  # a pending task asks for more or less: the counts (and the records) stay
        pending = [t for uid in jobs for t in snap.jobs[uid].tasks_in(TaskStatus.PENDING)]
        if pending:
            old = pending[pick % len(pending)]
            new = copy.copy(old)
            new.resreq = Resource.from_quantities({"cpu": ["1", "3", "16"][pick % 3], "memory": "1Gi"})
            new._key = new._best_effort = None
            snap.jobs[old.job_uid].replace_task(old, new)
    elif op == "min-available" and jobs:  # a field of the job changed in place
        j = snap.jobs[jobs[pick % len(jobs)]]
        j.min_available = 1 + (j.min_available % max(len(j.tasks), 1))
    elif op == "cancel" and jobs:
        gone = snap.jobs.pop(jobs[pick % len(jobs)])
        for t in gone.tasks.values():
            if t.node_name is not None:
                snap.nodes[t.node_name].remove_task(t)
    elif op == "complete":
        running = [t for uid in jobs for t in snap.jobs[uid].tasks_in(TaskStatus.RUNNING)]
        if running:
            t = running[pick % len(running)]
            snap.nodes[t.node_name].remove_task(t)
            snap.jobs[t.job_uid].update_task_status(t, TaskStatus.SUCCEEDED)
    elif op.startswith("node-"):
        n = snap.nodes[nodes[pick % len(nodes)]]
        if op == "node-labels":
            n.labels = {"zone": "b" if n.labels.get("zone") == "a" else "a"}
        elif op == "node-labels-in-place":  # the same dict object, changed: must be seen too
            n.labels["zone"] = "b" if n.labels.get("zone") == "a" else "a"
        elif op == "node-cpu":
            bigger = n.allocatable.clone()
            bigger.milli_cpu *= 2
            n.allocatable, n.idle = bigger, bigger.clone().sub_without_assert(n.used)
        elif op == "node-unschedulable":
            n.unschedulable = not n.unschedulable
        else:
            n.taints = [] if n.taints else list(TAINT)
    elif op.startswith("queue-"):
        q = snap.queues[queue_names[pick % len(queue_names)]]
        if op == "queue-capability":
            q.capability = None if q.capability is not None else Resource.from_quantities({"cpu": "2"})
        elif op == "queue-weight":
            q.weight = 1 + (q.weight % 3)
        else:
            q.state = type(q.state)("Closed" if q.state.value == "Open" else "Open")


def _indexed(j):
    # builders.job fills `tasks` only; the snapshot's build indexes them: do it here.
    tasks = list(j.tasks.values())
    j.tasks = {}
    for t in tasks:
        j.add_task(t)
    return j


@settings(max_examples=120, deadline=None)
@given(spec=clusters(), which=st.sampled_from(sorted(CONFS)),
       changes=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 11)), min_size=3, max_size=8))
def test_a_kept_close_equals_a_fresh_one_after_any_changes(spec, which, changes):
    cfg = CONFS[which]
    refresh = job_entries.REFRESH_EVERY
    job_entries.REFRESH_EVERY = 10**6  # no refresh: what is compared must be enough alone
    try:
        kept, fresh = build(spec), build(spec)
        # Two quiet sessions first: entries are kept from the second one, used from the third.
        for step, (op, pick) in enumerate([("nothing", 0), ("nothing", 0), *changes]):
            for snap in (kept, fresh):
                _apply(snap, op, pick, step)
            got = _result(kept, cfg, True)
            want = _result(fresh, cfg, False)
            assert got == want, (step, op)
            settle(kept)
            settle(fresh)
    finally:
        job_entries.REFRESH_EVERY = refresh


def test_an_unchanged_job_is_answered_from_its_entry():
    # A gang that cannot fit beside what runs: the same inputs session after session.
    busy = job("busy", "q1", [task("b1", cpu="2", status="Running", node="n1")], min_available=1)
    gang = job("g", "q1", replicas("gw", 2, cpu="3"), min_available=2)
    from tests.scheduler_core.builders import queue, snapshot

    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("q1")], jobs=[busy, gang])
    seen = []
    for _ in range(4):
        seen.append(run_session(snap).reasons["ns/g"])
        settle(snap)
    # Entries are kept from the snapshot's second session on: the same object from then on.
    assert seen[1] is seen[2] is seen[3] and seen[1].to_json() == seen[0].to_json()
    gang.delete_task(gang.tasks["ns/gw-1"])  # its tasks and minimum changed: answered afresh
    gang.min_available = 1
    after = run_session(snap).reasons["ns/g"]
    assert seen[3].code.value == "NeverFits" and after.code.value == "QueueOverDeserved"


def test_refresh_buckets_spread_the_jobs_over_the_sessions():
    uids = [f"ns/j{i}" for i in range(1000)]
    counts = [0] * job_entries.REFRESH_EVERY
    for uid in uids:
        counts[job_entries.bucket_of(uid)] += 1
    assert sum(counts) == 1000 and max(counts) < 2 * 1000 / job_entries.REFRESH_EVERY


def test_moved_quoted_figures_requote_the_kept_answer(monkeypatch):
    # g waits on q1's capability (2 of 4 cpu left, it needs 3); a job in the sibling q2 finishes
    # between sessions: p's and root's allocated move, which g's queue_chain quotes, and nothing
    # else that g's answer reads. The kept entry is requoted: its text rendered again, equal to a
    # fresh close's, with no NeverFits check.
    from tests.scheduler_core.builders import queue, snapshot
    from tests.scheduler_core.explain.test_never_fits import CAPACITY_TREE

    def cluster() -> ClusterSnapshot:
        return snapshot(
            nodes=[node("n1", cpu="16", memory="64Gi")],
            queues=[queue("p", "root"), queue("q1", "p", capability={"cpu": "4", "memory": "64Gi"}),
                    queue("q2", "p")],
            jobs=[job("busy", "q1", replicas("b", 2, cpu="1", status="Running", node="n1")),
                  job("g", "q1", [task("gw", cpu="3")]),
                  job("other", "q2", replicas("o", 2, cpu="3", status="Running", node="n1"))])

    calls = []
    real = job_entries.JobEntries.requoted
    monkeypatch.setattr(job_entries.JobEntries, "requoted",
                        lambda self, *a: (calls.append(a[0].job.uid), real(self, *a))[1])
    monkeypatch.setattr(job_entries, "REFRESH_EVERY", 10**6)
    from scheduler_core.explain import reason_figures

    rendered = []  # the sessions in which a quota refusal was rendered from scratch
    real_render = reason_figures.CloseFigures._render
    monkeypatch.setattr(reason_figures.CloseFigures, "_render",
                        lambda self, *a: (rendered.append(step), real_render(self, *a))[1])
    kept, fresh = cluster(), cluster()
    kept_state(kept).lasting = True  # kept as the incremental load keeps it: from the first session
    answers = []
    for step in range(4):
        if step == 3:  # one of q2's tasks completes on either copy
            for snap in (kept, fresh):
                t = snap.jobs["ns/other"].tasks["ns/o-0"]
                snap.nodes["n1"].remove_task(t)
                snap.jobs["ns/other"].update_task_status(t, TaskStatus.SUCCEEDED)
        got, want = _result(kept, CAPACITY_TREE, True), _result(fresh, CAPACITY_TREE, False)
        assert got == want, step
        answers.append(json.loads(got)["reasons"]["ns/g"])
        settle(kept)
        settle(fresh)
    assert calls == ["ns/g"]  # only at step 3, only g (busy runs, other is not waiting)
    # The requote says what the session before said about q1 (same level, same 2 cpu left): the
    # kept rendering serves, with this session's chain (CloseFigures._still); the fresh copy
    # renders at every step.
    assert rendered.count(3) == 1
    chain = {lvl["queue"]: lvl["allocated"]["cpu"] for lvl in answers[3]["details"]["queue_chain"]}
    assert [a["code"] for a in answers] == ["QueueOverCapability"] * 4
    assert chain == {"root": 5.0, "p": 5.0, "q1": 2.0}  # the moved figures are quoted
    assert answers[2]["details"]["queue_chain"][0]["allocated"]["cpu"] == 8.0
    assert answers[3]["message"] == answers[2]["message"] == (
        "queue q1 resource quota insufficient: insufficient cpu (need 3, 2 left)")

"""Statement: tentative operations change the session at once; discard restores it exactly."""

from __future__ import annotations

from scheduler_core.framework.interface import EventHandler
from scheduler_core.framework.session import Session
from scheduler_core.model import TaskStatus
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot, task

S = TaskStatus


def cluster():
    snap = snapshot(
        nodes=[node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi")],
        jobs=[
            job("a", tasks=[task("a0", status=S.RUNNING, node="n1"),
                            task("a1", status=S.RUNNING, node="n1")]),
            job("b", min_available=3, tasks=replicas("b", 3)),
        ],
    )
    ssn = Session(snap, conf("allocate", [["gang"]]))
    events: list[str] = []
    ssn.add_event_handler(EventHandler(allocate_func=lambda e: events.append(f"+{e.task.name}"),
                                       deallocate_func=lambda e: events.append(f"-{e.task.name}")))
    return ssn, events


def fingerprint(ssn: Session):
    """Everything a discard must restore: node, table, job and task accounting."""
    nodes = {n.name: (n.idle.to_canonical(), n.used.to_canonical(), n.releasing.to_canonical(),
                      n.pipelined.to_canonical(), sorted(n.tasks)) for n in ssn.nodes.values()}
    t = ssn.node_table
    table = [a.tolist() for a in (t.idle, t.used, t.releasing, t.pipelined, t.future, t.pod_count)]
    jobs = {j.uid: (j.allocated.to_canonical(), j.total_request.to_canonical(),
                    {s.value: sorted(ts) for s, ts in j.task_status_index.items()})
            for j in ssn.jobs.values()}
    tasks = {t.uid: (t.status, t.node_name) for j in ssn.jobs.values() for t in j.tasks.values()}
    return nodes, table, jobs, tasks, sorted(ssn.placed)


def try_three(ssn):
    a0 = ssn.jobs["ns/a"].tasks["ns/a0"]
    b0, b1 = ssn.jobs["ns/b"].tasks["ns/b-0"], ssn.jobs["ns/b"].tasks["ns/b-1"]
    stmt = ssn.statement()
    stmt.evict(a0, "preempted")
    stmt.pipeline(b0, "n1")
    stmt.allocate(b1, "n2")
    return stmt, a0, b0, b1


def test_operations_apply_at_once():
    ssn, events = cluster()
    stmt, a0, b0, b1 = try_three(ssn)
    n1, n2 = ssn.nodes["n1"], ssn.nodes["n2"]
    assert (n1.idle.milli_cpu, n1.used.milli_cpu, n1.releasing.milli_cpu, n1.pipelined.milli_cpu) == (
        2000, 2000, 1000, 1000)
    assert n1.future_idle().milli_cpu == 2000
    assert ssn.node_table.future[0, 0] == 2000
    assert n2.idle.milli_cpu == 3000 and ssn.node_table.idle[1, 0] == 3000
    assert (a0.status, b0.status, b1.status) == (S.RELEASING, S.PIPELINED, S.ALLOCATED)
    assert ssn.jobs["ns/a"].allocated.milli_cpu == 1000
    assert ssn.jobs["ns/b"].allocated.milli_cpu == 1000
    assert [t.name for t in stmt.evicted()] == ["a0"]
    assert events == ["-a0", "+b-0", "+b-1"]
    assert ssn.result.evictions == []  # not final before commit


def test_discard_restores_exact_accounting_and_fires_undo_events():
    ssn, events = cluster()
    before = fingerprint(ssn)
    stmt, a0, b0, b1 = try_three(ssn)
    stmt.discard()
    assert fingerprint(ssn) == before
    assert (a0.node_name, b0.node_name, b1.node_name) == ("n1", None, None)
    # undo runs last-first: unallocate, unpipeline (deallocate), unevict (allocate again)
    assert events == ["-a0", "+b-0", "+b-1", "-b-1", "-b-0", "+a0"]
    assert stmt.operations == [] and ssn.result.evictions == []


def test_commit_keeps_operations_and_records_evictions():
    ssn, _ = cluster()
    stmt, a0, b0, b1 = try_three(ssn)
    stmt.commit()
    assert ssn.result.evictions == ["ns/a0"]
    assert ssn.eviction_reasons == {"ns/a0": "preempted"}
    assert list(ssn.placed) == ["ns/b-0", "ns/b-1"]
    stmt.discard()  # nothing left to undo after commit
    assert b1.status is S.ALLOCATED


def test_two_statements_discard_only_their_own():
    ssn, _ = cluster()
    b = ssn.jobs["ns/b"]
    first = ssn.statement()
    first.allocate(b.tasks["ns/b-0"], "n2")
    first.commit()
    mid = fingerprint(ssn)
    second = ssn.statement()
    second.allocate(b.tasks["ns/b-1"], "n2")
    second.allocate(b.tasks["ns/b-2"], "n1")
    second.discard()
    assert fingerprint(ssn) == mid
    assert ssn.nodes["n2"].idle.milli_cpu == 3000


def test_direct_session_operations():
    ssn, events = cluster()
    a1 = ssn.jobs["ns/a"].tasks["ns/a1"]
    ssn.evict(a1, "reclaimed")
    ssn.allocate(ssn.jobs["ns/b"].tasks["ns/b-2"], "n2")
    assert ssn.result.evictions == ["ns/a1"]
    assert a1.status is S.RELEASING and ssn.nodes["n1"].releasing.milli_cpu == 1000
    assert events == ["-a1", "+b-2"]

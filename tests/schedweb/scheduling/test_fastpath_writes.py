"""The cycle's set-based writers: change sets by arrays or COPY, reason history, queue samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schedweb.core.models import Job, Node, Queue, Task
from schedweb.scheduling import writes
from schedweb.scheduling.models import CycleRun, JobReasonHistory, QueueSample

from .conftest import requires_postgres

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 12, 0, 0, 123_456, tzinfo=UTC)
T1 = T0 + timedelta(seconds=5)


def _jobs(*names: str) -> dict[str, Job]:
    queue = Queue.objects.create(name="q")
    return {n: Job.objects.create(namespace="ns", name=n, queue=queue) for n in names}


def _span(job: Job, code: str, first: datetime, last: datetime, current: bool) -> None:
    JobReasonHistory.objects.create(job=job, code=code, message=f"{code} msg", details={"n": 1},
                                    first_seen=first, last_seen=last, current=current)


@pytest.mark.parametrize("json_copy_min_rows", [1, 10_000], ids=["copy", "insert"])
def test_reason_history_touches_only_the_current_spans_of_the_listed_jobs(json_copy_min_rows, monkeypatch):
    monkeypatch.setattr(writes, "JSON_COPY_MIN_ROWS", json_copy_min_rows)  # new spans: COPY (PostgreSQL)
    jobs = _jobs("changed", "same", "other", "cleared")
    old = T0 - timedelta(minutes=5)
    _span(jobs["changed"], "NotEnqueued", old, old, current=False)  # an older, closed span
    _span(jobs["changed"], "NodeFit", T0, T0, current=True)
    _span(jobs["same"], "NodeFit", T0, T0, current=True)
    _span(jobs["other"], "NodeFit", T0, T0, current=True)
    _span(jobs["cleared"], "NodeFit", T0, T0, current=True)
    changes = [writes.JobChange(jobs["changed"].id, "Pending", "Pending", "GangUnschedulable", "2/3",
                                {"queue_chain": ["root", "q"]}, T1),
               writes.JobChange(jobs["cleared"].id, "Pending", "Running", "", "", {}, None)]
    inserted = writes.write_reason_history(changes, [jobs["same"].id], T1)
    assert inserted == 1  # a cleared reason opens no span
    rows = sorted(JobReasonHistory.objects.values_list("job__name", "code", "message", "details",
                                                       "first_seen", "last_seen", "current"))
    assert rows == [
        ("changed", "GangUnschedulable", "2/3", {"queue_chain": ["root", "q"]}, T1, T1, True),
        ("changed", "NodeFit", "NodeFit msg", {"n": 1}, T0, T0, False),
        ("changed", "NotEnqueued", "NotEnqueued msg", {"n": 1}, old, old, False),
        ("cleared", "NodeFit", "NodeFit msg", {"n": 1}, T0, T0, False),
        ("other", "NodeFit", "NodeFit msg", {"n": 1}, T0, T0, True),
        ("same", "NodeFit", "NodeFit msg", {"n": 1}, T0, T1, True),
    ]


def test_reason_history_with_nothing_to_do_writes_nothing():
    jobs = _jobs("a")
    _span(jobs["a"], "NodeFit", T0, T0, current=True)
    assert writes.write_reason_history([], [], T1) == 0
    assert list(JobReasonHistory.objects.values_list("last_seen", "current")) == [(T0, True)]


def _sample(run: CycleRun, queue: str, explanation: dict | None, **kw: object) -> QueueSample:
    return QueueSample(cycle=run, queue=queue, created=run.started, share=kw.pop("share", 0.5),
                       weight=kw.pop("weight", 2), overused=kw.pop("overused", False),
                       explanation=explanation, **kw)


FIELDS = ("cycle_id", "queue", "created", "deserved", "allocated", "request", "inqueue", "elastic",
          "capability", "real_capability", "guarantee", "share", "weight", "overused", "explanation")


def test_samples_are_written_field_for_field_and_only_the_latest_keep_explanations():
    first = CycleRun.objects.create(started=T0)
    writes.insert_samples([_sample(first, "a", {"why": ["x"]}, deserved={"cpu": 1000.0, "memory": 2.0**30})],
                          None)
    second = CycleRun.objects.create(started=T1)
    explanation = {"queue": "b", "steps": [{"deserved": {"cpu": 1.5}, "note": "ünïcode \"quoted\"\n"}]}
    writes.insert_samples([
        _sample(second, "a", None, allocated={"cpu": 0.0, "memory": 0.0}, share=0.0, weight=1),
        _sample(second, "b", explanation, deserved={"cpu": 2500.0, "memory": 2.0**31},
                allocated={"cpu": 500.0, "memory": 0.0}, request={"cpu": 3000.0, "memory": 0.0},
                inqueue={"cpu": 1.0, "memory": 1.0}, elastic={"cpu": 0.0, "memory": 0.0},
                capability={"cpu": 4000.0, "memory": 2.0**32, "nvidia.com/gpu": 2000.0},
                real_capability={"cpu": 4000.0, "memory": 2.0**32}, guarantee={"cpu": 100.0, "memory": 0.0},
                share=0.75, overused=True),
    ], first.id)
    rows = {(r["cycle_id"], r["queue"]): r for r in QueueSample.objects.values(*FIELDS)}
    assert rows[(first.id, "a")]["explanation"] is None  # moved on to the newest cycle
    assert rows[(first.id, "a")]["deserved"] == {"cpu": 1000.0, "memory": 2.0**30}
    assert rows[(second.id, "a")] == {
        "cycle_id": second.id, "queue": "a", "created": T1, "deserved": None,
        "allocated": {"cpu": 0.0, "memory": 0.0}, "request": None, "inqueue": None, "elastic": None,
        "capability": None, "real_capability": None, "guarantee": None, "share": 0.0, "weight": 1,
        "overused": False, "explanation": None}
    assert rows[(second.id, "b")] == {
        "cycle_id": second.id, "queue": "b", "created": T1, "deserved": {"cpu": 2500.0, "memory": 2.0**31},
        "allocated": {"cpu": 500.0, "memory": 0.0}, "request": {"cpu": 3000.0, "memory": 0.0},
        "inqueue": {"cpu": 1.0, "memory": 1.0}, "elastic": {"cpu": 0.0, "memory": 0.0},
        "capability": {"cpu": 4000.0, "memory": 2.0**32, "nvidia.com/gpu": 2000.0},
        "real_capability": {"cpu": 4000.0, "memory": 2.0**32}, "guarantee": {"cpu": 100.0, "memory": 0.0},
        "share": 0.75, "weight": 2, "overused": True, "explanation": explanation}
    assert len(rows) == QueueSample.objects.count() == 3


def _task_rows() -> dict[str, tuple[int, str, str, int]]:
    """name -> (id, status, `updated` as the database's text, job id), as the load reads them."""
    from schedweb.scheduling.adapter import load_state

    state = load_state(T1)
    return {uid.rsplit("/", 1)[1]: row for uid, row in state.tasks.items()}


@requires_postgres
@pytest.mark.parametrize("copy_min_rows", [0, 10_000], ids=["copy", "unnest"])
def test_task_and_job_updates_skip_rows_changed_since_the_load(copy_min_rows: int, monkeypatch):
    monkeypatch.setattr(writes, "COPY_MIN_ROWS", copy_min_rows)
    monkeypatch.setattr(writes, "JSON_COPY_MIN_ROWS", copy_min_rows)
    queue = Queue.objects.create(name="q")
    node = Node.objects.create(name="n0", allocatable={"cpu": 4000, "memory": 2**33, "pods": 110})
    gone = Node.objects.create(name="gone", allocatable={"cpu": 4000, "memory": 2**33, "pods": 110})
    job = Job.objects.create(namespace="ns", name="j", queue=queue)
    other = Job.objects.create(namespace="ns", name="k", queue=queue)
    for name in ("same", "status", "stamp", "to-gone"):
        Task.objects.create(job=job, name=name, request={"cpu": 1000, "memory": 2**30})
    rows = _task_rows()
    # The API changes two rows after the load; a node is deleted.
    Task.objects.filter(name="status").update(status="Failed")
    Task.objects.filter(name="stamp").update(updated=T1 + timedelta(microseconds=1))
    gone_id = gone.id
    gone.delete()
    targets = (("same", node.id), ("status", node.id), ("stamp", node.id), ("to-gone", gone_id))
    changes = [writes.TaskChange(rows[n][0], rows[n][1], rows[n][2], "Binding", nid, True)
               for n, nid in targets]
    assert writes.update_tasks(changes, T1) == {rows["same"][0]}
    assert dict(Task.objects.values_list("name", "status")) == {
        "same": "Binding", "status": "Failed", "stamp": "Pending", "to-gone": "Pending"}
    assert Task.objects.get(name="same").node_id == node.id
    # A second call in the same transaction starts from an empty change table.
    again = [writes.TaskChange(rows["to-gone"][0], "Pending", rows["to-gone"][2], "Releasing")]
    assert writes.update_tasks(again, T1) == {rows["to-gone"][0]}
    Job.objects.filter(pk=other.pk).update(phase="Cancelled")
    applied = writes.update_jobs([
        writes.JobChange(job.id, "Pending", "Inqueue", "NodeFit", "0/1 nodes", {"a": [1, "x\ty"]}, T1),
        writes.JobChange(other.id, "Pending", "Inqueue", "NodeFit", "m", {}, None)], T1)
    assert applied == {job.id}
    assert list(Job.objects.order_by("name").values_list(
        "name", "phase", "reason_code", "reason_message", "reason_details", "reason_since")) == [
        ("j", "Inqueue", "NodeFit", "0/1 nodes", {"a": [1, "x\ty"]}, T1),
        ("k", "Cancelled", "", "", {}, None)]


@pytest.mark.parametrize("copy_min_rows", [0, 10_000], ids=["copy", "unnest"])
def test_reworded_reasons_replace_the_current_span_text_only(copy_min_rows: int, monkeypatch):
    # Same code, new figures: after update_jobs wrote them (job changes by COPY or by unnest
    # arrays), the current span takes the cycle's message and details; closed spans and other
    # jobs keep theirs.
    monkeypatch.setattr(writes, "JSON_COPY_MIN_ROWS", copy_min_rows)
    jobs = _jobs("a", "b", "c")
    old = T0 - timedelta(minutes=5)
    _span(jobs["a"], "NodeFit", old, old, current=False)
    for name in ("a", "b", "c"):
        _span(jobs[name], "QueueOverCapability", T0, T0, current=True)
    details = {"queue_chain": [{"queue": "q", "left": {"cpu": 1.5}}], "note": "ünï \"q\"\n\t"}
    code = "QueueOverCapability"
    reworded = [writes.JobChange(jobs["a"].id, "Inqueue", "Inqueue", code, "need 2, 1.5 left", details, T0),
                writes.JobChange(jobs["b"].id, "Inqueue", "Inqueue", code, "need 2, 0 left", {}, T0)]
    Job.objects.update(phase="Inqueue")
    assert writes.update_jobs(reworded, T1) == {jobs["a"].id, jobs["b"].id}
    assert writes.write_reason_history([], [jobs["c"].id], T1, reworded=reworded) == 0
    rows = sorted(JobReasonHistory.objects.values_list("job__name", "code", "message", "details",
                                                       "last_seen", "current"))
    assert rows == [
        ("a", "NodeFit", "NodeFit msg", {"n": 1}, old, False),
        ("a", "QueueOverCapability", "need 2, 1.5 left", details, T0, True),
        ("b", "QueueOverCapability", "need 2, 0 left", {}, T0, True),
        ("c", "QueueOverCapability", "QueueOverCapability msg", {"n": 1}, T1, True),
    ]

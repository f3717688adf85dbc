"""The cycle's job changes (job_changes): what each job's row must take from the session, exact,
and the same answers as the plain comparison of every job it replaced, cycle after cycle."""

from __future__ import annotations

import random
import weakref
from datetime import UTC, datetime, timedelta

from scheduler_core.result import Reason, ReasonCode, SessionResult
from schedweb.core.models import TERMINAL_JOB_PHASES, UNSCHEDULED_JOB_PHASES
from schedweb.scheduling import reason_chain
from schedweb.scheduling.adapter import JobRow, LoadedState
from schedweb.scheduling.job_changes import details_text, job_changes
from schedweb.scheduling.writes import JobChange

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(seconds=2)
CHAIN = [{"queue": "root", "headroom_of": "capability", "deserved": {"cpu": 4000.0}},
         {"queue": "q", "headroom_of": "capability", "deserved": {"cpu": 1000.0}}]
BY_REF = [{"queue": "root", "headroom_of": "capability"}, {"queue": "q", "headroom_of": "capability"}]


def row(pk: int, phase: str = "Inqueue", code: str = "", message: str = "", details: dict | None = None,
        since: datetime | None = None) -> JobRow:
    return JobRow(pk, phase, code, message, {} if details is None else details, since, "volcano")


def state_of(rows: dict[str, JobRow]) -> LoadedState:
    return LoadedState(snapshot=None, jobs=rows, full=False)  # type: ignore[arg-type]


def test_each_job_takes_its_phase_and_reason_and_nothing_else_is_written():
    quota = Reason(ReasonCode.QueueOverCapability, "need 2, 1 left",
                   {"queue_chain": CHAIN, "need": {"cpu": 2}})
    rows = {
        "ns/running": row(1, "Running"),  # nothing to say, nothing stored
        "ns/cleared": row(2, "Inqueue", "NodeFit", "0/3 nodes", {"n": 3}, T0),
        "ns/new": row(3, "Pending"),
        "ns/same": row(4, "Inqueue", "QueueOverCapability", "need 2, 1 left",
                       {"queue_chain": BY_REF, "need": {"cpu": 2}}, T0),
        "ns/reworded": row(5, "Inqueue", "QueueOverCapability", "need 2, 0 left",
                           {"queue_chain": BY_REF, "need": {"cpu": 2}}, T0),
        "ns/done": row(6, "Running"),
        "ns/suspended": row(7, "Aborted", "Suspended", "suspended by x", {}, T0),
        "ns/finished": row(8, "Completed"),
        "ns/stale": row(9, "Running", "", "", {"left": "over"}),  # no reason, yet details stored
    }
    result = SessionResult(
        job_phase={"ns/running": "Running", "ns/cleared": "Running", "ns/new": "Inqueue",
                   "ns/same": "Inqueue", "ns/reworded": "Inqueue", "ns/done": "Completed",
                   "ns/suspended": "Inqueue"},
        reasons={"ns/new": Reason(ReasonCode.NotEnqueued, "job ns/new is not enqueued yet"), "ns/same": quota,
                 "ns/reworded": quota, "ns/suspended": quota, "ns/finished": quota})
    changes, code_changed, same_code = job_changes(state_of(rows), result, T1)
    assert changes == [
        JobChange(2, "Inqueue", "Running", "", "", {}, None, None),
        JobChange(3, "Pending", "Inqueue", "NotEnqueued", "job ns/new is not enqueued yet", {}, T1, None),
        JobChange(5, "Inqueue", "Inqueue", "QueueOverCapability", "need 2, 1 left",
                  {"queue_chain": BY_REF, "need": {"cpu": 2}}, T0, None),
        JobChange(9, "Running", "Running", "", "", {}, None, None),
    ]
    # The job that completed keeps its phase (the task writers complete it), the suspended and
    # finished ones are not the scheduler's to write.
    assert code_changed == {2, 3}
    assert same_code == [4, 5]
    # An equal details document is the row's own object: the writers send no text for it.
    assert changes[2].details is rows["ns/reworded"].reason_details


def test_details_in_a_new_text_are_sent_as_their_json():
    rows = {"ns/a": row(1, "Inqueue", "NodeFit", "m", {"n": 1}, T0)}
    details = {"node_failures": {"Insufficient cpu": 3}, "queue_chain": CHAIN}
    result = SessionResult(reasons={"ns/a": Reason(ReasonCode.NodeFit, "m", details)})
    (change,), _, same = job_changes(state_of(rows), result, T1)
    assert change.details == {"node_failures": {"Insufficient cpu": 3}, "queue_chain": BY_REF}
    assert change.details_text == details_text(change.details, {})
    assert (change.since, same) == (T0, [1])


def _reference(state: LoadedState, result: SessionResult, now: datetime, memo: weakref.WeakKeyDictionary,
               ) -> tuple[list[JobChange], set[int], list[int]]:
    """The comparison of every job the cycle made before (schedweb.scheduling.cycle, 2026-12)."""
    changes: list[JobChange] = []
    parts: dict = {}
    chains: dict = {}
    code_changed: set[int] = set()
    same_code: list[int] = []
    for uid, r in state.jobs.items():
        if r.phase in UNSCHEDULED_JOB_PHASES:
            continue
        phase = str(result.job_phase.get(uid, r.phase))
        if phase in TERMINAL_JOB_PHASES:
            phase = r.phase
        reason = result.reasons.get(uid)
        text = None
        if reason is None:
            code, message, details = "", "", {}
        else:
            seen = memo.get(reason) if hasattr(reason, "__weakref__") else None
            if seen is None:
                data = reason.to_json() if hasattr(reason, "to_json") else dict(reason)
                seen = [str(data["code"]), data["message"],
                        reason_chain.by_reference(data.get("details") or {}, chains), None]
                if hasattr(reason, "__weakref__"):
                    memo[reason] = seen
            code, message, details = seen[0], seen[1], seen[2]
            if details is r.reason_details or details == r.reason_details:
                details = r.reason_details
            elif details:
                if seen[3] is None:
                    seen[3] = details_text(details, parts)
                text = seen[3]
            else:
                text = "{}"
        if code == r.reason_code:
            if code:
                same_code.append(r.id)
            if phase == r.phase and message == r.reason_message and details == r.reason_details:
                continue
            since = r.reason_since
        else:
            since = now if code else None
            code_changed.add(r.id)
        changes.append(JobChange(r.id, r.phase, phase, code, message, details, since, text))
    return changes, code_changed, same_code


PHASES = ("Pending", "Inqueue", "Running", "Completed", "Cancelled", "Aborted", "Failed")


def _new_reason(rng: random.Random) -> object:
    code = rng.choice([ReasonCode.NodeFit, ReasonCode.QueueOverCapability, ReasonCode.GangUnschedulable])
    details = rng.choice([
        {}, {"n": rng.randint(0, 2)}, {"queue_chain": CHAIN, "need": {"cpu": rng.randint(1, 2)}},
        {"queue_chain": [{"queue": "odd"}], "t": (1, 2)}, {1: "int key"}])
    message = f"{code} {rng.randint(0, 2)}"
    if rng.random() < 0.1:  # a plain mapping, read afresh every cycle
        return {"code": code, "message": message, "details": dict(details)}
    return Reason(code, message, dict(details))


def test_cycle_after_cycle_the_changes_are_those_of_the_plain_comparison():
    rng = random.Random(20261204)
    memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    rows = {f"ns/j{i}": row(i, rng.choice(PHASES)) for i in range(80)}
    reasons: dict[str, object] = {}
    now = T0
    for _ in range(40):
        now += timedelta(seconds=2)
        # The session: most reasons are last cycle's objects, some new (often saying the same),
        # some gone; dict reasons change in place; phases mostly the row's.
        for uid in rows:
            pick = rng.random()
            if pick < 0.15:
                reasons.pop(uid, None)
            elif pick < 0.4 or uid not in reasons:
                reasons[uid] = _new_reason(rng)
            elif isinstance(reasons[uid], dict) and rng.random() < 0.5:
                reasons[uid]["message"] = f"moved {rng.randint(0, 1)}"  # type: ignore[index]
        phases = {uid: (r.phase if rng.random() < 0.8 else rng.choice(PHASES)) for uid, r in rows.items()
                  if rng.random() < 0.95}
        result = SessionResult(job_phase=phases, reasons=dict(reasons))
        state = state_of(rows)
        got = job_changes(state, result, now)
        assert got == _reference(state, result, now, memo)
        # The writes as the next load sees them: the changed rows (some conflict and stay), a few
        # rows changed by others, jobs that come and go.
        for change in got[0]:
            if rng.random() < 0.9:
                uid = next(u for u, r in rows.items() if r.id == change.id)
                rows[uid] = JobRow(change.id, change.phase, change.code, change.message, change.details,
                                   change.since, "volcano")
        for uid in rng.sample(sorted(rows), 3):
            old = rows[uid]
            rows[uid] = row(old.id, rng.choice(PHASES), old.reason_code, old.reason_message,
                            dict(old.reason_details), old.reason_since)
        gone = rng.choice(sorted(rows))
        del rows[gone]
        reasons.pop(gone, None)
        rows[f"ns/n{now.second}{len(rows)}"] = row(1000 + len(rows) + now.second * 100, rng.choice(PHASES))

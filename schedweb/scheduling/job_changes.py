"""The cycle's job changes: each job's phase and current reason against its loaded row.

A job's changes follow from three things: its loaded row, its entry in the session's phases and
its Reason object (scheduler_core hands back the same Reason while a job's reason is not rendered
again: its reason_memo; jobs of one shape share one). So the pass keeps, with the incremental
loader's kept snapshot (`incremental.row_log`), what it compared each job against last cycle and
compares again only the jobs whose row the delta moved, whose phase entry or Reason object is
not last cycle's (gone ones included), whose reason is a plain mapping (it may change in place),
and those it found a change for last cycle but could not write (a conflict): the others would
give what they gave, nothing, and so does a job whose row is what the last pass wrote (the row
log's `own`) while the session gives the same phase and reason. A Reason rendered anew whose
words are the job's last one's (code, message, details with the queue chain by reference:
scheduler_core renders a quota reason again whenever a queue's figures move) counts as the same
(`_same_words`). A full load, a copy of the snapshot (a sharded instance's own jobs), SQLite, or
a cycle whose pass did not run (the log's generation tells) compare every job.
The comparison itself is kept cheap: phases are looked up in sets of plain strings, a job without
a reason is settled by four comparisons, and a Reason is rendered for the rows (code, message,
details with the queue chain by reference, their JSON text) once per object.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from scheduler_core.result import Reason, SessionResult
from schedweb.core.models import TERMINAL_JOB_PHASES, UNSCHEDULED_JOB_PHASES
from schedweb.scheduling import incremental, reason_chain, writes
from schedweb.scheduling.adapter import JobRow, LoadedState
from schedweb.scheduling.row_log import JobRowLog

# Plain strings: a row's phase is one, and a set answers without comparing it to each member.
_UNSCHEDULED = frozenset(str(p) for p in UNSCHEDULED_JOB_PHASES)
_TERMINAL = frozenset(str(p) for p in TERMINAL_JOB_PHASES)
# Reason object -> [code, message, details (queue chain by reference), their JSON text or None
# until a writer needs it].
_reason_json: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_DETAILS: dict = {}  # compared with, never handed out
_MISSING = object()
MEMO_KEY = "job_changes"  # this module's entry in the row log's memo


@dataclass(slots=True)
class Memo:
    """What the last pass compared the jobs against, kept with the snapshot (row log `gen`)."""

    gen: int
    phases: dict[str, Any] = field(default_factory=dict)   # result.job_phase as compared
    reasons: dict[str, Any] = field(default_factory=dict)  # result.reasons as compared
    pending: set[str] = field(default_factory=set)  # a change was found: compared again
    loose: set[str] = field(default_factory=set)    # a plain mapping's reason: compared again
    same: dict[str, int] = field(default_factory=dict)  # uid -> id, waiting for the stored code


def job_changes(state: LoadedState, result: SessionResult, now: datetime,
                ) -> tuple[list[writes.JobChange], set[int], list[int]]:
    """Phases and current reasons of changed jobs: (changes in `state.jobs` order, ids whose
    reason code changed, ids still waiting for the same reason code (in no set order))."""
    log = incremental.row_log(state)
    memo = log.memo.get(MEMO_KEY) if log is not None else None
    visits: Iterable[tuple[str, JobRow | None]] | None = None
    if log is not None and memo is not None and memo.gen == log.gen - 1:
        visits = _bounded_visits(state, result, memo, log)
    if visits is None:
        memo = Memo(log.gen if log is not None else 0)
        visits = state.jobs.items()
        bounded = False
    else:
        bounded = True
    assert memo is not None
    changes, code_changed = _compare(visits, result, now, memo, bounded)
    if log is not None:
        memo.gen, memo.phases, memo.reasons = log.gen, dict(result.job_phase), dict(result.reasons)
        log.memo[MEMO_KEY] = memo
    return changes, code_changed, list(memo.same.values())


def _bounded_visits(state: LoadedState, result: SessionResult, memo: Memo, log: JobRowLog,
                    ) -> list[tuple[str, JobRow | None]] | None:
    """The jobs to compare again, in `state.jobs` order (gone ones, row None, first); None when
    a job's place is unknown (compare them all)."""
    moved, pending = log.moved, memo.pending
    own = log.own - moved  # rows as our last cycle wrote them, nobody else since
    visit = moved | (own ^ pending) | memo.loose
    phases, last = result.job_phase, memo.phases
    if phases != last:
        get = last.get
        visit.update(uid for uid, phase in phases.items() if get(uid) is not phase)
        visit.update(last.keys() - phases.keys())
    reasons, kept = result.reasons, memo.reasons
    get = kept.get
    pairs: dict[tuple[int, int], tuple[object, object, bool]] = {}  # _same_words' chain answers
    for uid, reason in reasons.items():
        was = get(uid)
        if was is not reason and (uid in visit or not _same_words(reason, was, pairs)):
            visit.add(uid)
    visit.update(kept.keys() - reasons.keys())
    jobs = state.jobs
    # Written last cycle from the phase and Reason the session gives again: the row says what
    # the comparison would, so no change; the job still waits for its (written) code.
    for uid in (own & pending) - visit:
        row = jobs.get(uid)
        if row is None:
            visit.add(uid)
            continue
        pending.discard(uid)
        if row.reason_code and row.phase not in _UNSCHEDULED:
            memo.same[uid] = row.id
        else:
            memo.same.pop(uid, None)
    order = log.order
    gone = [(uid, None) for uid in visit if uid not in jobs]
    here = [(order.get(uid, -1), uid) for uid in visit if uid in jobs]
    if any(place < 0 for place, _ in here):
        return None
    here.sort()
    return [*gone, *((uid, jobs[uid]) for _, uid in here)]


def _same_words(new: Any, old: Any, pairs: dict[tuple[int, int], tuple[object, object, bool]]) -> bool:
    """Whether a Reason rendered anew says what the job's last one said, as the rows hold it:
    code, message and details, a queue chain by reference (scheduler_core renders a quota
    reason again whenever a queue's figures move: its words mostly stay)."""
    if new.__class__ is not Reason or old.__class__ is not Reason:
        return False  # a plain mapping may change in place; a subclass may render otherwise
    if new.code is not old.code or new.message != old.message:
        return False
    now, was = new.details, old.details
    if now is was:
        return True
    if len(now) != len(was):
        return False
    for key, value in now.items():
        before = was.get(key, _MISSING)
        if value is before:
            continue
        if key == "queue_chain" and isinstance(value, list) and isinstance(before, list):
            hit = pairs.get((id(value), id(before)))
            if hit is None or hit[0] is not value or hit[1] is not before:
                chains: dict[int, tuple[object, object]] = {}
                same = (reason_chain.by_reference({key: value}, chains)
                        == reason_chain.by_reference({key: before}, chains))
                hit = pairs[(id(value), id(before))] = (value, before, same)
            if not hit[2]:
                return False
        elif value != before:
            return False
    return True


def _compare(visits: Iterable[tuple[str, JobRow | None]], result: SessionResult, now: datetime, memo: Memo,
             bounded: bool) -> tuple[list[writes.JobChange], set[int]]:
    """Compare the visited jobs (all of them unless `bounded`), keeping what the next pass needs."""
    changes: list[writes.JobChange] = []
    parts: dict[int, tuple[object, str]] = {}  # details_text's memo for this cycle's renderings
    chains: dict[int, tuple[object, object]] = {}  # reason_chain.by_reference's, the same way
    code_changed: set[int] = set()
    phases, reasons = result.job_phase, result.reasons
    pending, loose, same = memo.pending, memo.loose, memo.same
    for uid, row in visits:
        if bounded:  # what this comparison finds replaces what the last one found
            pending.discard(uid)
            loose.discard(uid)
            same.pop(uid, None)
        if row is None:  # gone
            continue
        stored = row.phase
        if stored in _UNSCHEDULED:  # finished, or suspended (its reason says so)
            continue
        phase = phases.get(uid, stored)
        if phase is not stored:
            phase = str(phase)
            if phase in _TERMINAL:
                # Completion (with `finished`) is the task status writers' job: the agent, the API.
                phase = stored
        reason = reasons.get(uid)
        text: str | None = None
        if reason is None:
            if row.reason_code == "" and phase == stored and row.reason_message == "" \
                    and row.reason_details == _NO_DETAILS:
                continue  # no reason, none stored: most jobs
            code, message, details = "", "", {}
        else:
            seen, weak = _rendered(reason, chains)
            if not weak:
                loose.add(uid)
            code, message, details = seen[0], seen[1], seen[2]
            # A job whose reason was not rendered again keeps last cycle's, whose details are
            # the very object its row holds (incremental.own_jobs): `is`, no comparison, no JSON.
            if details is row.reason_details or details == row.reason_details:
                details = row.reason_details
            elif details:
                if seen[3] is None:  # the writers send it as it is
                    seen[3] = details_text(details, parts)
                text = seen[3]
            else:
                text = "{}"
        if code == row.reason_code:
            if code:
                same[uid] = row.id
            if phase == stored and message == row.reason_message and details == row.reason_details:
                continue
            since = row.reason_since
        else:
            since = now if code else None
            code_changed.add(row.id)
        pending.add(uid)
        changes.append(writes.JobChange(row.id, stored, phase, code, message, details, since, text))
    return changes, code_changed


def _rendered(reason: Any, chains: dict[int, tuple[object, object]]) -> tuple[list, bool]:
    """The reason as the rows hold it, once per Reason object, and whether it is kept (a plain
    mapping is read afresh: it may change in place). The details are kept as rendered,
    not round-tripped through JSON: they are JSON values (a tuple would compare unequal to the
    list a full load reads back, costing one rewrite of the same text, never a wrong row). A
    queue chain is stored by reference (its readers fill in the cycle's figures: reason_chain),
    so figures that moved alone rewrite no row."""
    weak = hasattr(reason, "__weakref__")  # a plain dict is read afresh: it may change in place
    seen = _reason_json.get(reason) if weak else None
    if seen is None:
        data = reason.to_json() if hasattr(reason, "to_json") else dict(reason)
        details = reason_chain.by_reference(data.get("details") or {}, chains)
        seen = [str(data["code"]), data["message"], details, None]
        if weak:
            _reason_json[reason] = seen
    return seen, weak


def details_text(details: dict, memo: dict[int, tuple[object, str]]) -> str:
    """`json.dumps(details, sort_keys=True, default=str)`, the same text, with each top-level
    list or dict value dumped once per object: reasons of one queue share their `queue_chain`
    (scheduler_core.reason_figures hands out one read-only list per queue and limit), the bulk
    of the text. `memo` keeps the objects it has seen (their ids stay theirs while it lives)."""
    if not all(isinstance(key, str) for key in details):
        return json.dumps(details, sort_keys=True, default=str)
    out = []
    for key in sorted(details):
        value = details[key]
        if isinstance(value, list | dict):
            hit = memo.get(id(value))
            if hit is None or hit[0] is not value:
                hit = memo[id(value)] = (value, json.dumps(value, sort_keys=True, default=str))
            text = hit[1]
        else:
            text = _scalar_text(value)
        out.append(f"{encode_basestring_ascii(key)}: {text}")
    return "{" + ", ".join(out) + "}"


_LITERALS = {None: "null", True: "true", False: "false"}


def _scalar_text(value: object) -> str:
    """json.dumps(value, default=str) of a scalar, without building an encoder for it (a reason
    has a dozen: its code, check, queue, counts)."""
    kind = value.__class__
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if value is None or kind is bool:
        return _LITERALS[value]
    return json.dumps(value, default=str)

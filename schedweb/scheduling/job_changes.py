"""The cycle's job changes: each job's phase and current reason against its loaded row.

Every job is compared every cycle: the loader and the session hand over no list of what they
changed, and a pass over the jobs that tells which of them moved (by the identity of their row,
phase and Reason objects) costs about what this comparison costs where nothing moved. So the
comparison is kept cheap instead: phases are looked up in sets of plain strings, a job without a
reason is settled by four comparisons, and a Reason is rendered for the rows (code, message,
details with the queue chain by reference, their JSON text) once per object. scheduler_core hands
back the same Reason while a job's reason is not rendered again (its reason_memo), and jobs of one
shape share one; what costs is the Reasons it renders anew (half the waiting jobs' in a steady L
cycle, nearly all of them saying what the row already says).
"""

from __future__ import annotations

import json
import math
import weakref
from datetime import datetime
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from scheduler_core.result import SessionResult
from schedweb.core.models import TERMINAL_JOB_PHASES, UNSCHEDULED_JOB_PHASES
from schedweb.scheduling import reason_chain, writes
from schedweb.scheduling.adapter import LoadedState

# Plain strings: a row's phase is one, and a set answers without comparing it to each member.
_UNSCHEDULED = frozenset(str(p) for p in UNSCHEDULED_JOB_PHASES)
_TERMINAL = frozenset(str(p) for p in TERMINAL_JOB_PHASES)
# Reason object -> [code, message, details (queue chain by reference), their JSON text or None
# until a writer needs it].
_reason_json: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_DETAILS: dict = {}  # compared with, never handed out


def job_changes(state: LoadedState, result: SessionResult, now: datetime,
                ) -> tuple[list[writes.JobChange], set[int], list[int]]:
    """Phases and current reasons of changed jobs: (changes, ids whose reason code changed, ids
    still waiting for the same reason code), in `state.jobs` order."""
    changes: list[writes.JobChange] = []
    parts: dict[int, tuple[object, str]] = {}  # details_text's memo for this cycle's renderings
    chains: dict[int, tuple[object, object]] = {}  # reason_chain.by_reference's, the same way
    code_changed: set[int] = set()
    same_code: list[int] = []
    phases, reasons = result.job_phase, result.reasons
    for uid, row in state.jobs.items():
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
            seen = _rendered(reason, chains)
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
                same_code.append(row.id)
            if phase == stored and message == row.reason_message and details == row.reason_details:
                continue
            since = row.reason_since
        else:
            since = now if code else None
            code_changed.add(row.id)
        changes.append(writes.JobChange(row.id, stored, phase, code, message, details, since, text))
    return changes, code_changed, same_code


def _rendered(reason: Any, chains: dict[int, tuple[object, object]]) -> list:
    """The reason as the rows hold it, once per Reason object. The details are kept as rendered,
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
    return seen


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

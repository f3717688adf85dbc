"""Why a job is still waiting: one structured reason per job with unbound tasks at session close.

Actions and plugins record candidates while the session runs (`ssn.record_reason(job_uid, code,
message, plugin, details)` into `ssn.reason_records`, `ssn.record_fit_errors(job_uid, task_uid,
FitErrors)` into `ssn.fit_errors`); `build_reasons(ssn)` picks the most specific one per job:
InvalidJob, NeverFits (computed here, never_fits.py), Deferred (over the work budget,
framework.work_budget), QueueClosed, NotEnqueued,
QueueOverCapability, QueueOverDeserved, GangUnschedulable / NodeFit, WaitingForPreemption, else
Unknown. Wording follows Volcano.
Exception: a job with pipelined tasks and a WaitingForPreemption record (preempt/reclaim evicted
victims for it) gets WaitingForPreemption over a quota refusal recorded before the evictions.

One source of truth: a queue refusal's record carries *what* was refused (`details["refusal"]`,
reason_figures.refusal); its message and details are rendered here, at close, from the
committed queue figures of the session (`ssn.result.queues`), never from the figures the
recorder saw mid-statement. A refusal that no longer holds at close is skipped. Amounts in
details are output units rounded to what the unit needs (reason_figures.output_amount).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.records import (  # noqa: F401  (re-exported: explain's readers import them here)
    GIB,
    RENDERED_KEYS,
    FitErrors,
    Reason,
    ReasonCode,
    fit_message,
    format_amount,
    gang_message,
    insufficient_message,
)
from scheduler_core.framework.waiting_jobs import waiting_jobs
from scheduler_core.model import JobPhase, QueueState, TaskStatus

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo

# Most specific first; GangUnschedulable and NodeFit share a rank (built from the job's state).
# NeverFits is computed, never recorded: it comes right after InvalidJob (never_fits.py).
# Deferred (the evaluation was stopped part way) outranks what the partial evaluation recorded.
PRECEDENCE = (ReasonCode.InvalidJob, ReasonCode.NeverFits, ReasonCode.Deferred, ReasonCode.QueueClosed,
              ReasonCode.NotEnqueued, ReasonCode.QueueOverCapability, ReasonCode.QueueOverDeserved)
RECORDED = (ReasonCode.Deferred, ReasonCode.QueueClosed, ReasonCode.NotEnqueued,
            ReasonCode.QueueOverCapability, ReasonCode.QueueOverDeserved)
# Quota refusals give way to WaitingForPreemption once preempt/reclaim pipelined the job's tasks.
QUOTA_CODES = frozenset({ReasonCode.QueueOverCapability, ReasonCode.QueueOverDeserved})


def unbound_tasks(ssn: Session, job: JobInfo) -> list[str]:
    """Uids of the job's tasks without a node binding at close (Pending, Pipelined, unbound Allocated)."""
    out = [t.uid for t in job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED)]
    out.extend(t.uid for t in job.tasks_in(TaskStatus.ALLOCATED) if t.uid not in ssn.result.binds)
    return sorted(out)


def _code(value: Any) -> ReasonCode:
    try:
        return ReasonCode(str(getattr(value, "value", value)))
    except ValueError:
        return ReasonCode.Unknown


def _fit_of(ssn: Session, job: JobInfo, unbound: list[str]) -> tuple[int, dict[str, int]] | None:
    # The first unbound task (by uid) that recorded fit errors speaks for the job: every
    # summary is about one task ("0/N nodes"), so counts are not summed across tasks.
    recorded = getattr(ssn, "fit_errors", {}).get(job.uid) or {}
    for uid in unbound:
        fe = recorded.get(uid)
        if fe is not None:
            return int(fe.total_nodes), {str(k): int(v) for k, v in fe.reasons.items()}
    return None


def _details(chosen: dict[str, Any] | None, fit: tuple[int, dict[str, int]] | None) -> dict[str, Any]:
    # The chosen record's own details, less what the recorder measured mid-session.
    details: dict[str, Any] = {}
    if chosen and chosen.get("details"):
        details = {k: v for k, v in chosen["details"].items() if k not in RENDERED_KEYS}
    if fit and fit[1]:
        details["node_failures"] = dict(sorted(fit[1].items()))
    return details


def _invalid_record(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    for rec in records:  # the first InvalidJob record (recording order)
        code = rec.get("code")
        if code.__class__ is not ReasonCode:  # a plain string (or foreign enum) recorded
            code = _code(code)
        if code is ReasonCode.InvalidJob:
            return rec
    return None


def job_reason(ssn: Session, job: JobInfo, unbound: list[str] | None = None, close: Any = None) -> Reason:
    """The most specific reason for one job (see the module docstring for the order).

    `close` is build_reasons' per-session CloseState (figures, NeverFits index, kept entries);
    built when None. `unbound`: unbound_tasks(ssn, job), computed when None (a kept entry's
    answer does not need it).
    """
    if close is None:
        close = CloseState(ssn)
    raw = getattr(ssn, "reason_records", {}).get(job.uid) or []
    recorded = getattr(ssn, "fit_errors", {}).get(job.uid)
    queue = ssn.queues.get(job.queue)
    rec = _invalid_record(raw)
    if rec is not None or queue is None:
        message = str(rec.get("message", "")) if rec is not None else f"queue {job.queue} does not exist"
        fit = _fit_of(ssn, job, _unbound(ssn, job, unbound))
        return Reason(ReasonCode.InvalidJob, message, _details(rec, fit))
    invalid = ssn.job_valid(job)
    if invalid is not None:
        return Reason(ReasonCode.InvalidJob, invalid.message or invalid.reason or "job is not valid",
                      _details(None, _fit_of(ssn, job, _unbound(ssn, job, unbound))))
    entries = getattr(close, "entries", None)
    if entries is not None:
        hit = entries.get(job, queue, raw, recorded)
        if hit is not None:
            if hit[1] is not None and close.memo is not None:
                close.memo.carry(hit[1], hit[0])
            return hit[0]
        if entries.requote is not None:  # the same quota reason over moved figures
            entry = entries.requote
            reason = _requote(close, job, entry.quote) if entry.quote is not None else None
            if reason is None:  # not its first candidate's rendering, or that one went stale
                reason = _tail_of(ssn, close, job, _unbound(ssn, job, unbound), raw, queue)
            entries.requoted(entry, queue, reason)
            return reason
    known = entries.never_of(job, queue) if entries is not None else None
    part = None
    if known is not None:  # the NeverFits answer of an unchanged job, on unchanged nodes and bounds
        never, part = known
    else:
        never = close.never_fits.check(job)
        if never is not None:  # kept as computed: this session's fit details go to a copy
            never = Reason(never.code, never.message, dict(never.details))
    unbound = _unbound(ssn, job, unbound)
    reason, memo_key, part = _fresh_reason(ssn, close, job, unbound, list(raw), queue, never, part)
    if entries is not None:
        quote = quote_of(close, job, raw, _fit_of(ssn, job, unbound), queue) if never is None else None
        entries.put(job, queue, raw, recorded, reason, memo_key, never, part, quote)
    return reason


def quote_of(close: Any, job: JobInfo, records: list[dict[str, Any]], fit: tuple[int, dict[str, int]] | None,
             queue: Any) -> tuple[ReasonCode, dict[str, Any], dict[str, Any]] | None:
    """(code, refusal, details besides the rendering) when `_tail_reason` answers the job with
    the rendering of its first recorded candidate, a quota refusal (while that one is not stale);
    None when its answer starts elsewhere. With the same job, records, fit errors and queue
    state, `_requote` gives the tail's answer over any figures, or None where it would go on."""
    by_code = _by_code(records)
    if ReasonCode.QueueClosed not in by_code and queue.state is not QueueState.OPEN:
        return None
    if job.waiting_task_num() and by_code.get(ReasonCode.WaitingForPreemption):
        return None  # a quota refusal then gives way to WaitingForPreemption
    for code in RECORDED:
        recs = by_code.get(code)
        if not recs:
            continue
        ref = (recs[0].get("details") or {}).get("refusal") if code in QUOTA_CODES else None
        if ref is None or ref.get("queue") not in close.figures.figures:
            return None
        return code, ref, _details(recs[0], fit)
    return None


def _requote(close: Any, job: JobInfo,
             quote: tuple[ReasonCode, dict[str, Any], dict[str, Any]]) -> Reason | None:
    """The tail's answer from `quote` (quote_of) over this session's figures; None when stale."""
    code, ref, fixed = quote
    rendered = close.figures.render(job, ref)
    if rendered is None:
        return None
    details = dict(fixed)
    details.update(rendered[1])
    return Reason(code, rendered[0], details)


def _unbound(ssn: Session, job: JobInfo, unbound: list[str] | None) -> list[str]:
    return unbound_tasks(ssn, job) if unbound is None else unbound


def _fresh_reason(ssn: Session, close: Any, job: JobInfo, unbound: list[str], records: list[dict[str, Any]],
                  queue: Any, never: Reason | None,
                  part: tuple | None) -> tuple[Reason, tuple | None, tuple | None]:
    """(reason, its memo key or None, the job part of the key) for a valid job: `never` (its
    NeverFits answer), else the tail (memoised; `part`: the job part when known)."""
    fit = _fit_of(ssn, job, unbound)
    if never is not None:
        details = dict(never.details)
        details.update(_details(None, fit))  # node_failures of this session's tries
        return Reason(never.code, never.message, details), None, part
    by_code = _by_code(records)
    memo = getattr(close, "memo", None)
    if memo is None:
        return _tail_reason(close, job, unbound, by_code, fit, queue), None, None
    key = memo.key(job, queue, records, fit, len(unbound), part)
    part = memo.last_part
    hit = memo.get(key, fresh=close.entries is not None and close.entries.due(job))
    if hit is not None:
        return hit, key, part
    reason = memo.put(key, job, _tail_reason(close, job, unbound, by_code, fit, queue))
    return reason, key if memo.current.get(key) is reason else None, part  # a key only for a shared one


def _by_code(records: list[dict[str, Any]]) -> dict[ReasonCode, list[dict[str, Any]]]:
    by_code: dict[ReasonCode, list[dict[str, Any]]] = {}
    for rec in records:  # recording order within each code
        by_code.setdefault(_code(rec.get("code")), []).append(rec)
    return by_code


def _tail_of(ssn: Session, close: Any, job: JobInfo, unbound: list[str], records: list[dict[str, Any]],
             queue: Any) -> Reason:
    """_fresh_reason's answer for a job that fits in principle (no NeverFits), without the memo."""
    return _tail_reason(close, job, unbound, _by_code(records), _fit_of(ssn, job, unbound), queue)


def _tail_reason(close: Any, job: JobInfo, unbound: list[str],
                 by_code: dict[ReasonCode, list[dict[str, Any]]],
                 fit: tuple[int, dict[str, int]] | None, queue: Any) -> Reason:
    """job_reason after InvalidJob and NeverFits: a function of what ReasonMemo.key gathers."""

    def first(code: ReasonCode) -> dict[str, Any] | None:
        recs = by_code.get(code)
        return recs[0] if recs else None

    def pick(code: ReasonCode, message: str, rec: dict[str, Any] | None = None) -> Reason:
        return Reason(code, message, _details(rec, fit))

    if ReasonCode.QueueClosed not in by_code and queue.state is not QueueState.OPEN:
        return pick(ReasonCode.QueueClosed, f"queue {queue.name} is {queue.state.value.lower()}")
    # preempt / reclaim pipelined tasks of this job after evicting victims: a quota refusal
    # recorded before those evictions (allocate, or the preemptor's first allocatable check)
    # no longer describes what the job waits for.
    waiting_rec = first(ReasonCode.WaitingForPreemption) if job.waiting_task_num() else None
    for code in RECORDED:
        for rec in by_code.get(code, ()):
            if waiting_rec is not None and code in QUOTA_CODES:
                return pick(ReasonCode.WaitingForPreemption, str(waiting_rec.get("message", "")), waiting_rec)
            if code in QUOTA_CODES:
                ref = (rec.get("details") or {}).get("refusal")
                if ref is not None and ref.get("queue") in close.figures.figures:
                    rendered = close.figures.render(job, ref)
                    if rendered is None:
                        continue  # stale: the close figures have room for it now
                    details = _details(rec, fit)
                    details.update(rendered[1])
                    return Reason(code, rendered[0], details)
                return pick(code, str(rec.get("message", "")), rec)  # no figures: no numbers
            return pick(code, str(rec.get("message", "")), rec)
    if job.phase is JobPhase.PENDING:
        return pick(ReasonCode.NotEnqueued, f"job {job.uid} is not enqueued yet")

    fit_text = fit_message(*fit) if fit and fit[1] else ""
    placed = job.ready_task_num() + job.waiting_task_num()
    if job.min_available > 1 and placed < job.min_available:
        text = gang_message(job) + (f"; {fit_text}" if fit_text else "")
        return pick(ReasonCode.GangUnschedulable, text, first(ReasonCode.GangUnschedulable))
    if fit_text:
        return pick(ReasonCode.NodeFit, fit_text, first(ReasonCode.NodeFit))
    for code in (ReasonCode.GangUnschedulable, ReasonCode.NodeFit, ReasonCode.WaitingForPreemption):
        rec = first(code)
        if rec is not None:
            return pick(code, str(rec.get("message", "")), rec)
    waiting = job.waiting_task_num()
    if waiting:
        return pick(ReasonCode.WaitingForPreemption,
                    f"{waiting} task(s) pipelined, waiting for resources being released")
    rec = first(ReasonCode.Unknown)
    if rec is not None:
        return pick(ReasonCode.Unknown, str(rec.get("message", "")), rec)
    return pick(ReasonCode.Unknown, f"{len(unbound)} task(s) not scheduled; no action recorded why")


class CloseState:
    """What build_reasons computes once per session: the close figures, the NeverFits index,
    the renderings shared by jobs with the same inputs (`memo`, reason_memo) and the answers
    kept per job across sessions (`entries`, job_entries); None = every job rendered on its own."""

    def __init__(self, ssn: Session, memo: bool = False) -> None:
        from scheduler_core.explain import job_entries
        from scheduler_core.explain.never_fits import NeverFitsIndex
        from scheduler_core.explain.reason_figures import CloseFigures
        from scheduler_core.explain.reason_memo import ReasonMemo, kept_memo

        self.figures = CloseFigures(ssn)
        self.never_fits = NeverFitsIndex(ssn, self.figures)
        self.memo = ReasonMemo(self.figures, *kept_memo(ssn.snapshot)) if memo else None
        kept = getattr(ssn, "kept", None)
        self.entries = None
        # Only when the state keeps answers (KeptState.keeps_answers: not on a snapshot's first
        # session, unless the caller keeps it, which would pay for entries nobody reads).
        if memo and job_entries.enabled and kept is not None and kept.keeps_answers():
            part = kept.part("reasons", job_entries.KeptEntries)
            self.entries = job_entries.JobEntries(ssn, self.figures, part)


def build_reasons(ssn: Session) -> dict[str, Reason]:
    """One Reason per job (uid order) that still has unbound tasks when the session closes.

    A job set aside (framework.isolation) gets InvalidJob with the error, whatever its tasks:
    its waiting tasks were taken out of the session. A job whose reason cannot be built is set
    aside here too, rather than failing every other job's answer.
    """
    from scheduler_core.explain import reason_memo
    from scheduler_core.framework.isolation import error_of

    out: dict[str, Reason] = {}
    close = CloseState(ssn, memo=reason_memo.enabled)
    waiting = (TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED)
    # With a kept state, the jobs with an unbound task come from its index (framework.waiting_jobs),
    # with the set-aside ones (answered whatever their tasks), instead of a walk of every job.
    index = waiting_jobs(ssn)
    if index is None:
        visit: Iterable[str] = sorted(ssn.own_jobs)
    else:
        own = ssn.own_jobs
        visit = sorted(index.unbound.union(uid for uid in ssn.quarantined if uid in own))
    for uid in visit:
        job = ssn.jobs[uid]
        if uid not in ssn.quarantined:
            idx = job.task_status_index
            unbound = None  # a Pending or Pipelined task is unbound: computed when needed
            if not (idx.get(waiting[0]) or idx.get(waiting[1])):
                if not idx.get(waiting[2]):
                    continue  # nothing unbound (unbound_tasks would be empty)
                unbound = unbound_tasks(ssn, job)
                if not unbound:
                    continue  # every Allocated task is bound
            try:
                out[uid] = job_reason(ssn, job, unbound, close)
                continue
            except Exception as exc:
                ssn.quarantine(job, error_of(exc, "reasons"))
        error = ssn.quarantined[uid]
        out[uid] = Reason(ReasonCode.InvalidJob, error.reason_message(), {"error": error.to_json()})
    if close.memo is not None:
        reason_memo.keep(ssn.snapshot, close.memo)
    if close.entries is not None:
        close.entries.keep()
    return out

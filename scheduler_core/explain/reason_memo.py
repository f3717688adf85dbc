"""Reasons rendered once per distinct input, within a session and across the sessions of a kept
snapshot (issue 27, item 2).

A waiting job's reason (after InvalidJob and NeverFits, which stay per job) is a function of a
few inputs: the candidates recorded for it (code, plugin, details, the refusal it carries, and
the message unless the refusal is rendered from the close figures), the fit errors of the task
that speaks for it ("the nodes it was tried on"), its own counts (phase, gang minimum, tasks per
status, unbound tasks), what its gang still needs, and, only for a refusal rendered from them,
its queue and the close figures of the queue chain. `ReasonMemo.key` gathers exactly these into
a tuple; jobs with an equal key get the same `Reason` object, so jobs of one shape in one queue
share one rendering (and the web side one JSON text: it compares reasons by identity first).
Reasons that quote the job itself (its uid or name in the message) are never shared.

Across sessions: a snapshot kept between cycles (schedweb's incremental load) carries the
previous session's renderings (`kept_memo`, a weak map: a fresh snapshot starts empty), so a job
that changed, or a new one, of a known shape gets last cycle's very object. Most unchanged jobs
do not get here at all: job_entries hands back their kept answer, and keeps carrying the
renderings they share (`carry`). A job due its refresh (job_entries' buckets) skips the kept
renderings and puts a fresh one in their place: each rendering in use is rebuilt at least once
every job_entries.REFRESH_EVERY sessions, a bound on the life of anything the key would miss,
without a session that re-renders everything at once.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from scheduler_core.explain.reason_figures import gang_need, resource_key
from scheduler_core.framework.records import RENDERED_KEYS
from scheduler_core.model import QueueState
from scheduler_core.resources import Resource

if TYPE_CHECKING:
    from scheduler_core.explain.reason_figures import CloseFigures
    from scheduler_core.explain.reasons import Reason
    from scheduler_core.model import ClusterSnapshot, JobInfo, QueueInfo

# id(record) -> (the record, its part of a key): records kept alive, so their ids stay theirs.
RecordKeys = dict[int, tuple[dict[str, Any], tuple]]
enabled = True  # False: every job rendered on its own (the tests compare the two)
_FIGURES = ("deserved", "allocated", "request", "inqueue", "elastic", "capability", "real_capability",
            "guarantee")


def freeze(value: Any) -> Any:
    """A hashable, order-independent stand-in for a details value (dicts, lists, Resources)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return ("d", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("l", tuple(freeze(v) for v in value))
    if isinstance(value, Resource):
        return resource_key(value)
    code = getattr(value, "value", None)
    if isinstance(code, str):  # enums (reason codes, phases)
        return ("e", code)
    return ("r", repr(value))


class ReasonMemo:
    """One session's renderings by key (seeded with the kept snapshot's previous ones)."""

    def __init__(self, figures: CloseFigures, previous: dict[tuple, Reason] | None = None,
                 records: RecordKeys | None = None) -> None:
        self.figures = figures
        self.previous = previous or {}
        self.current: dict[tuple, Reason] = {}
        self._chains: dict[str, tuple] = {}
        self._queues: dict[str, tuple] = {}
        # id(record) -> (record, its part of the key), this session's and the previous one's.
        self.records_seen: RecordKeys = {}
        self._records_before = records or {}
        self._carried: dict[int, Reason] = {}
        self.last_part: tuple | None = None  # the job_part of the last key (job_entries keeps it)
        self.hits = self.kept = self.rendered = 0

    def chain_key(self, queue: str) -> tuple:
        """The close figures of the queue's chain (root .. queue), computed once per queue."""
        hit = self._chains.get(queue)
        if hit is None:
            hit = self._chains[queue] = tuple(self._queue_key(n) for n in self.figures.chain(queue))
        return hit

    def _queue_key(self, name: str) -> tuple:
        hit = self._queues.get(name)
        if hit is None:
            fig = self.figures.figures[name]
            hit = self._queues[name] = (name, fig.share, fig.weight, fig.overused,
                                        *(resource_key(getattr(fig, f)) for f in _FIGURES))
        return hit

    def _record(self, rec: dict[str, Any]) -> tuple[tuple, bool, bool]:
        """(the record's part of the key, quotes the figures, needs the gang's need), once per
        record object (the gang close hands the same record to an unchanged job every session)."""
        hit = self.records_seen.get(id(rec)) or self._records_before.get(id(rec))
        if hit is not None and hit[0] is rec:  # the record itself is held: its id is still its own
            self.records_seen[id(rec)] = hit
            return hit[1]
        details = rec.get("details") or {}
        ref = details.get("refusal")
        message = rec.get("message")
        quotes = needs_gang = False
        if ref is not None and ref.get("queue") in self.figures.figures:
            # Rendered from the close figures: the recorder's message and its mid-session
            # view (queue_chain, limit, failed_queue) are never quoted.
            message = None
            quotes = True
            needs_gang = ref.get("check") != "enqueue"
        kept = {k: v for k, v in details.items() if k not in RENDERED_KEYS} if details else {}
        part = ((str(getattr(rec.get("code"), "value", rec.get("code"))), message, rec.get("plugin"),
                 freeze(kept), freeze(ref)), quotes, needs_gang)
        self.records_seen[id(rec)] = (rec, part)
        return part

    @staticmethod
    def job_part(job: JobInfo, unbound: int, needs_gang: bool) -> tuple:
        """The job's own part of the key: a function of its tasks and fields (job_entries keeps
        it with the job's answer while they do not change)."""
        # Tasks per status (empty buckets are dropped by JobInfo): gang_message's histogram.
        counts = tuple(sorted((str(s), len(b)) for s, b in job.task_status_index.items() if b))
        gang = None
        if needs_gang:
            gang = resource_key(gang_need(job))
        return (job.phase, job.min_available, len(job.tasks), counts, unbound, job.ready_task_num(),
                needs_gang, gang)

    def key(self, job: JobInfo, queue: QueueInfo, records: list[dict[str, Any]], fit: Any,
            unbound: int, part: tuple | None = None) -> tuple:
        """Everything the tail of reasons.job_reason reads for this job (`part`: its job_part
        when known; one computed with the gang's need serves a key without it too)."""
        recs = []
        needs_gang = quotes_figures = False
        for rec in records:
            rec_key, quotes, gang = self._record(rec)
            recs.append(rec_key)
            quotes_figures |= quotes
            needs_gang |= gang
        if part is None or (needs_gang and not part[6]):
            part = self.job_part(job, unbound, needs_gang)
        self.last_part = part
        fit_key = None if fit is None else (fit[0], tuple(sorted(fit[1].items())))
        # The queue and its chain's figures are read only by a closed queue's message and by the
        # rendering of a refusal: other reasons (node fit, gang) are shared across queues and
        # outlive a change of figures they do not quote.
        closed = queue.state is not QueueState.OPEN
        where = job.queue if quotes_figures or closed else None
        chain = self.chain_key(job.queue) if quotes_figures else None
        return (where, queue.state if closed else None, *part[:6], tuple(recs), fit_key,
                part[7] if needs_gang else None, chain)

    def get(self, key: tuple, fresh: bool = False) -> Reason | None:
        """This session's rendering for the key, else the kept one from the previous session;
        None for a job due a fresh answer (`fresh`: its refresh bucket, job_entries)."""
        if fresh:
            return None
        hit = self.current.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        hit = self.previous.get(key)
        if hit is not None:
            self.kept += 1
            self.current[key] = hit
        return hit

    def carry(self, key: tuple, reason: Reason) -> None:
        """A kept answer's shared rendering stays available to this session's other jobs (and the
        next session's), unless one was rendered afresh for the key already."""
        if id(reason) not in self._carried:  # once per rendering: hashing a key is not free
            self._carried[id(reason)] = reason
            self.current.setdefault(key, reason)

    def put(self, key: tuple, job: JobInfo, reason: Reason) -> Reason:
        """Remember a fresh rendering unless it quotes the job itself; returns it."""
        self.rendered += 1
        if job.uid not in reason.message and (not job.name or job.name not in reason.message):
            self.current[key] = reason
        return reason


class _Kept:
    """The renderings a kept snapshot carries from one session to the next."""

    def __init__(self) -> None:
        self.renderings: dict[tuple, Reason] = {}
        self.records: RecordKeys = {}
        self.sessions = 0


_kept: weakref.WeakKeyDictionary[ClusterSnapshot, _Kept] = weakref.WeakKeyDictionary()


def kept_memo(snapshot: ClusterSnapshot) -> tuple[dict[tuple, Reason], RecordKeys]:
    """The previous session's renderings and record keys on this snapshot ({} for a new one)."""
    kept = _kept.get(snapshot)
    if kept is None:
        kept = _kept[snapshot] = _Kept()
    kept.sessions += 1
    return kept.renderings, kept.records


def keep(snapshot: ClusterSnapshot, memo: ReasonMemo) -> None:
    """Carry this session's renderings to the snapshot's next session."""
    kept = _kept.get(snapshot)
    if kept is not None:
        kept.renderings, kept.records = memo.current, memo.records_seen

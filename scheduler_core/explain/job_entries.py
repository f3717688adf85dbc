"""Each waiting job's reason kept across the sessions of a kept snapshot (issue 27, the close's cost).

At steady state almost every waiting job is the one of the last cycle: same tasks, same records,
same queue figures. `JobEntries` keeps, per job uid, the reason build_reasons gave it with what
that reason was computed from, and hands the reason back without a NeverFits check, a memo key
or a rendering when all of it is unchanged:

- the job itself: the same JobInfo object at the same `revision` (bumped by every change to its
  task indexes, so task counts, statuses and requests), with the same phase, queue, gang
  minimums and minResources;
- what the session recorded for it: its candidate reasons and its tasks' fit errors, compared
  by value (`==`, C speed: no freezing) as the answer reads them (`comparable`: a quota refusal
  that is rendered again from the close figures is compared without the recorder's message and
  mid-session figures, which move every cycle and are never quoted);
- what the answer reads around the job: the conf (the predicates, the queue plugin, the
  actions), the same or equal, the nodes' facts (`node_facts`: allocatable, pod limits, labels,
  taints, unschedulable, compared once per session), its queue's state and the figures of its queue
  chain that bound it (capability, guarantee, real capability), plus every figure of the chain
  when the reason quotes them (a quota refusal rendered at close, a queue limit's chain).

Whatever else changes (other queues' figures, other jobs, running tasks on the nodes) is not
read by the reason of an unchanged job that does not quote figures. When only the figures a quota
reason quotes moved (everything else above unchanged, no NeverFits answer), the entry is a
*requote*: the reason's tail is rendered again from this session's figures, with no NeverFits
check and no memo key, and jobs of one shape in one queue share that rendering
(CloseFigures.render). A job with no valid entry is answered as before (reasons.job_reason,
reason_memo) and its entry replaced.

Refresh, a bound on the life of anything the comparison would miss: each job falls in one of
`REFRESH_EVERY` buckets (a hash of its uid) and the jobs of one bucket per session are answered
afresh, so every entry is rebuilt once every REFRESH_EVERY sessions and no session re-renders
everything at once. Ninety sessions (three minutes at a 2 s period) bound how stale a kept answer
can be if the comparison missed an input; the lockstep property test (tests/scheduler_core/explain)
holds the comparison alone to the fresh answers, so the refresh is a backstop, and each bucket is
re-rendered work every session: at L a bucket of ten was 770 of 7,700 waiting jobs, of thirty
still 250 of the ~550 answered afresh per cycle (NeverFits check, memo key: ~150 us each).
"""

from __future__ import annotations

import copy
import zlib
from typing import TYPE_CHECKING, Any

from scheduler_core.explain.reason_memo import resource_key
from scheduler_core.framework.records import RENDERED_KEYS

if TYPE_CHECKING:
    from scheduler_core.explain.reason_figures import CloseFigures
    from scheduler_core.framework.node_table import NodeTable
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, QueueInfo
    from scheduler_core.result import Reason

REFRESH_EVERY = 90  # sessions between two fresh answers of one job (one bucket per session)
enabled = True  # False: no entry is used or kept (the tests compare the two)
# The queue figures a reason that does not quote figures may still depend on (NeverFits' limits).
_BOUNDS = ("capability", "guarantee", "real_capability")
_QUOTED = ("deserved", "allocated", "request", "inqueue", "elastic", "capability", "real_capability",
           "guarantee")


def bucket_of(uid: str) -> int:
    """The job's refresh bucket (stable across processes: not Python's salted hash)."""
    return zlib.crc32(uid.encode()) % REFRESH_EVERY


def node_facts(table: NodeTable) -> tuple:
    """What NeverFits reads of the nodes, in row order: the dimensions, allocatable, pod limits
    and schedulable flags (the table's arrays, as bytes), and each node's name, labels and
    taints (the live objects: `kept_facts` copies them for the next session's comparison)."""
    arrays = (tuple(table.dims), table.allocatable.tobytes(), table.max_pods.tobytes(),
              table.schedulable.tobytes())
    return arrays, [(n.name, n.labels, n.taints) for n in table.nodes]


def kept_facts(facts: tuple) -> tuple:
    """A copy of `node_facts` that later changes to the nodes' labels or taints cannot reach."""
    arrays, rows = facts
    return arrays, [(name, dict(labels), [_copy_taint(t) for t in taints] if taints else [])
                    for name, labels, taints in rows]


def _copy_taint(taint: Any) -> Any:
    # A taint is a flat dict of strings (key, value, effect): a shallow copy is a full one.
    if isinstance(taint, dict) and all(isinstance(v, (str, int, float, bool)) or v is None
                                       for v in taint.values()):
        return dict(taint)
    return copy.deepcopy(taint)


class JobEntry:
    """One job's reason with what it was computed from."""

    __slots__ = ("job", "revision", "fields", "records", "fit", "bounds", "queue_key", "quotes",
                 "reason", "memo_key", "never", "part", "bucket", "quote")

    def __init__(self, job: JobInfo, fields: tuple, records: list[dict[str, Any]], fit: Any,
                 bounds: tuple, queue_key: tuple, quotes: bool, reason: Reason,
                 memo_key: tuple | None, never: Reason | None, part: tuple | None, bucket: int) -> None:
        self.job = job
        self.revision = job.revision
        self.fields = fields
        self.records = records
        self.fit = fit
        self.bounds = bounds  # queue_key(queue, False): what the NeverFits answer reads
        self.queue_key = queue_key
        self.quotes = quotes
        self.reason = reason
        self.memo_key = memo_key
        self.never = never  # the NeverFits answer before this session's fit details (None: fits)
        self.part = part  # the job's part of its memo key (ReasonMemo.job_part), None when unused
        self.bucket = bucket
        # (code, refusal, fixed details) when the reason is the rendering of its first recorded
        # candidate, a quota refusal (reasons.quote_of): a requote renders that one again.
        self.quote: tuple | None = None


def job_fields(job: JobInfo) -> tuple:
    """The job's own fields a reason reads besides its tasks (covered by `revision`)."""
    return (job.phase, job.queue, job.min_available, dict(job.task_min_available),
            resource_key(job.min_resources))


def same_fields(fields: tuple, job: JobInfo) -> bool:
    """`fields == job_fields(job)` without building the tuple (the hot path of a hit)."""
    phase, queue, min_available, task_min, min_resources = fields
    return (phase is job.phase and queue == job.queue and min_available == job.min_available
            and task_min == job.task_min_available and min_resources == resource_key(job.min_resources))


class KeptEntries:
    """The entries a kept snapshot carries from one session to the next (a part of its
    framework.kept state: `run_session(kept=False)` answers every job afresh)."""

    def __init__(self) -> None:
        self.entries: dict[str, JobEntry] = {}
        self.conf: Any = None
        self.nodes: tuple | None = None
        # The last session's queue keys: an equal one is handed out as that very object, so the
        # entries that hold it compare by identity (a tuple of tuples compared item by item
        # otherwise, for every job of the queue).
        self.queue_keys: dict[tuple[str, bool], tuple] = {}


class JobEntries:
    """One session's view: the previous session's entries (valid ones reused) and this one's."""

    def __init__(self, ssn: Session, figures: CloseFigures, kept: KeptEntries | None) -> None:
        self.ssn = ssn
        self.figures = figures
        self.kept = kept
        self.previous: dict[str, JobEntry] = {}
        self.current: dict[str, JobEntry] = {}
        self._queue_keys: dict[tuple[str, bool], tuple] = {}
        self._level_keys: dict[tuple[str, bool], tuple] = {}
        self.hits = self.misses = self.requotes = 0
        self.requote: JobEntry | None = None  # set by get: see there
        self.refresh = -1
        if kept is None:
            return
        # The framework's count of sessions on the snapshot (KeptState.sessions, 1 = the first).
        self.refresh = (ssn.kept.sessions - 1) % REFRESH_EVERY if ssn.kept is not None else -1
        nodes = node_facts(ssn.node_table)
        same_nodes = kept.nodes == nodes  # labels and taints compared by value (kept ones are copies)
        if (kept.conf is ssn.conf or kept.conf == ssn.conf) and same_nodes:
            self.previous = kept.entries
        kept.conf = ssn.conf
        if not same_nodes:
            kept.nodes = kept_facts(nodes)

    def comparable(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records as the answer reads them: a refusal rendered from the close figures
        without the recorder's message and mid-session view (RENDERED_KEYS but the refusal),
        which move with the figures every cycle and are never quoted (reason_memo's record key)."""
        out = records
        for i, rec in enumerate(records):
            details = rec.get("details")
            ref = details.get("refusal") if details else None
            if ref is None or ref.get("queue") not in self.figures.figures:
                continue
            if out is records:
                out = list(records)
            kept = {k: v for k, v in details.items() if k == "refusal" or k not in RENDERED_KEYS}
            out[i] = {**{k: v for k, v in rec.items() if k != "message" and k != "details"},
                      "details": kept}
        return out

    def queue_key(self, queue: QueueInfo, quotes: bool) -> tuple:
        """The queue's state and its chain's bounding figures (every figure when `quotes`)."""
        key = (queue.name, quotes)
        hit = self._queue_keys.get(key)
        if hit is None:
            chain = tuple(self._level_key(n, quotes) for n in self.figures.chain(queue.name))
            hit = (queue.state, chain)
            if self.kept is not None:
                before = self.kept.queue_keys.get(key)
                if before is not None and before == hit:
                    hit = before
            self._queue_keys[key] = hit
        return hit

    def _level_key(self, name: str, quotes: bool) -> tuple:
        # Per level, not per chain: a parent's figures are read once for all its descendants.
        key = (name, quotes)
        hit = self._level_keys.get(key)
        if hit is None:
            fig = self.figures.figures[name]
            figure_key = self.figures.figure_key
            hit = (name, *(figure_key(name, f) for f in (_QUOTED if quotes else _BOUNDS)))
            if quotes:
                hit = (*hit, fig.share, fig.weight, fig.overused)
            self._level_keys[key] = hit
        return hit

    def due(self, job: JobInfo) -> bool:
        """The job is in this session's refresh bucket: answered afresh, kept renderings unused."""
        entry = self.previous.get(job.uid)
        return (entry.bucket if entry is not None else bucket_of(job.uid)) == self.refresh

    def get(self, job: JobInfo, queue: QueueInfo, records: list[dict[str, Any]],
            fit: Any) -> tuple[Reason, tuple | None] | None:
        """(kept reason, its shared rendering's memo key) when nothing it was computed from
        changed, else None. When only the figures a quota reason quotes moved (the job, its
        records, its fit errors, its queue's state and bounds are those of the entry, and it is
        no NeverFits answer), `requote` holds the entry: the answer is the tail rendered again
        (`requoted`), with no NeverFits check or memo key."""
        self.requote = None
        entry = self.previous.get(job.uid)
        if entry is None or entry.bucket == self.refresh or entry.job is not job \
                or entry.revision != job.revision:
            return None
        try:
            same = (same_fields(entry.fields, job) and entry.fit == fit
                    and entry.records == self.comparable(records))
        except Exception:  # a details value without a plain `==` (e.g. an array): answer afresh
            same = False
        if not same:
            return None
        if entry.queue_key != self.queue_key(queue, entry.quotes):
            if entry.quotes and entry.never is None and entry.bounds == self.queue_key(queue, False):
                self.requote = entry  # only the quoted figures moved: render again from them
            return None
        self.hits += 1
        self.current[job.uid] = entry
        return entry.reason, entry.memo_key

    def never_of(self, job: JobInfo, queue: QueueInfo) -> tuple[Reason | None, tuple | None] | None:
        """(the kept NeverFits answer, the kept job part of the memo key) when the job, its
        queue's bounds and the nodes are those they were computed from (the records may differ:
        a quota message moved), else None."""
        entry = self.previous.get(job.uid)
        if entry is None or entry.bucket == self.refresh or entry.job is not job \
                or entry.revision != job.revision or not same_fields(entry.fields, job) \
                or entry.bounds != self.queue_key(queue, False):
            return None
        if entry.never is not None and "queue_chain" in entry.never.details \
                and entry.queue_key != self.queue_key(queue, True):
            return None  # a queue limit's answer quotes its chain's figures: they moved
        return entry.never, entry.part

    def requoted(self, entry: JobEntry, queue: QueueInfo, reason: Reason) -> None:
        """Keep `entry` (handed out by `get` as `requote`) with its reason rendered again."""
        self.requotes += 1
        entry.reason, entry.memo_key = reason, None
        entry.queue_key = self.queue_key(queue, True)
        self.current[entry.job.uid] = entry

    def put(self, job: JobInfo, queue: QueueInfo, records: list[dict[str, Any]], fit: Any,
            reason: Reason, memo_key: tuple | None, never: Reason | None, part: tuple | None,
            quote: tuple | None = None) -> None:
        """Keep the job's fresh answer (and its NeverFits answer, and `quote`: see JobEntry) for
        the next session."""
        if self.kept is None:
            return
        self.misses += 1
        old = self.previous.get(job.uid)
        bucket = old.bucket if old is not None else bucket_of(job.uid)
        quotes = "queue_chain" in reason.details or any(
            (rec.get("details") or {}).get("refusal") is not None for rec in records)
        entry = self.current[job.uid] = JobEntry(job, job_fields(job), self.comparable(records), fit,
                                                 self.queue_key(queue, False),
                                                 self.queue_key(queue, quotes), quotes, reason, memo_key,
                                                 never, part, bucket)
        entry.quote = quote if never is None else None

    def keep(self) -> None:
        """Carry this session's entries (jobs gone or answered otherwise are dropped)."""
        if self.kept is not None:
            self.kept.entries = self.current
            self.kept.queue_keys = self._queue_keys

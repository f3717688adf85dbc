"""The incremental snapshot: the cycle process keeps its cluster objects between cycles and
applies only the rows that changed (PostgreSQL; SQLite loads everything every cycle).

Change tracking is the database's (scheduling migration 0004): triggers log (table, row id,
writing transaction id) for every insert, update and delete, whoever the writer. Each cycle
reads, in its first statement, the newest log id it can see and the transactions still running
(its snapshot's xip list). The next cycle applies the log rows above that id plus the rows of
those transactions: a row with a lower id that the first statement could not see belongs to a
transaction that was running then (ids are handed out in time order), so a late commit is never
missed, and nothing already applied is applied again. Changed rows are re-read and applied
through the model's own methods (schedweb.scheduling.delta), so job indexes, sums and node
accounting stay exact. Rows the session changed in memory only (placements, evictions, job
phases, set-aside jobs) are reset by `settle()`: phases at once, tasks and jobs re-read at the
next cycle (the cycle's writes come back through the log like anyone's).

Each scheduler instance (shard_runtime: one per shard, "" unsharded) keeps its own snapshot:
`use_shard(name)` switches to it, and "another process ran a cycle" compares only that
instance's CycleRuns (another shard's writes come in through the change log like anyone's).

A full load happens at start, when another process ran a cycle since ours (CycleRun ids), when
the log was pruned past what we need or a tracked table was truncated (the epoch row), every
SCHEDULER_FULL_RELOAD_EVERY cycles (default 1,800: an hour at a 2 s period; 0 = never), when the
active configuration or the database changes, after a failed cycle (`forget()`), and when the
session asks for a fresh snapshot. Between full loads every row is re-read at least once every
SCHEDULER_REREAD_EVERY cycles, a slice per cycle (`reread`), so nothing the log could miss
outlives a hundred cycles and no cycle pays for the whole cluster.

The session's plugins keep their figures with the snapshot too (`Cache.kept`, the snapshot's
`scheduler_core.framework.kept.KeptState`, which `run_session` uses by default): each plugin
checks its kept part against the applied objects (job revisions and fields), so the changed
rows applied here are all it needs, and a full load starts it afresh with the new snapshot.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from scheduler_core.framework.kept import KeptState, kept_state
from scheduler_core.result import SessionResult
from schedweb.scheduling import reread
from schedweb.scheduling.adapter import LoadedState, load_state
from schedweb.scheduling.delta import Applier, Reload
from schedweb.scheduling.row_log import JobRowLog

logger = logging.getLogger(__name__)

EPOCH_SQL = "SELECT epoch::text || ':' || horizon::text FROM scheduling_changeepoch WHERE id = 1"
# One statement, so one snapshot: the newest visible log id and the running transactions agree.
HEAD_SQL = ("SELECT pg_snapshot_xmin(s.snap)::text, "
            "ARRAY(SELECT x::text FROM pg_snapshot_xip(s.snap) AS x), "
            "(SELECT id FROM scheduling_change ORDER BY id DESC LIMIT 1), "
            f"({EPOCH_SQL}), "
            "(SELECT id FROM scheduling_cyclerun WHERE NOT skipped AND shard = %s ORDER BY id DESC LIMIT 1) "
            "FROM (SELECT pg_current_snapshot() AS snap) AS s")
CHANGES_SQL = ("SELECT DISTINCT tbl, row_id, xact::text FROM scheduling_change "
               "WHERE (id > %s OR xact = ANY(%s::xid8[])) AND id <= %s")
PRUNE_EVERY = 10  # cycles between deletions of the change log's applied rows


@dataclass
class Head:
    """What the cycle's first statement saw: its snapshot's xmin and running transactions, the
    newest log id, the log's epoch and prune horizon, the newest non-skipped CycleRun."""

    xmin: int
    running: list[str]
    newest: int
    epoch: str
    horizon: int
    last_run: int | None


@dataclass
class Cache:
    """One process's kept snapshot and everything needed to bring it up to date."""

    key: tuple[str, int | None]  # (database name, active config version)
    applier: Applier
    head: Head  # of the read the snapshot reflects
    last_run: int | None = None  # our newest CycleRun id (set by finish())
    cycles: int = 0  # since the full load
    stats: dict[str, int] = field(default_factory=dict)
    # The job rows our last cycle wrote (id -> change) and its transaction id: log rows of that
    # transaction alone are applied from here instead of re-read.
    own: dict[int, Any] = field(default_factory=dict)
    own_xact: str | None = None
    kept: KeptState | None = None  # the plugins' state kept with the snapshot (set at the full load)


_cache: Cache | None = None
full_loads = 0  # process-wide count (tests and the benchmark read it)
_shard = ""  # the instance whose snapshot `_cache` is (use_shard)
_others: dict[str, Cache | None] = {}  # the other instances' kept snapshots in this process


def use_shard(shard: str) -> None:
    """Make `shard`'s kept snapshot the current one (each instance keeps its own; a process
    usually runs one, tests alternate two)."""
    global _cache, _shard
    if shard != _shard:
        _others[_shard] = _cache
        _cache, _shard = _others.pop(shard, None), shard


def enabled() -> bool:
    """True where the change log exists (PostgreSQL)."""
    return connection.vendor == "postgresql"


def forget() -> None:
    """Drop the kept snapshot (after a failed cycle: the session's changes were rolled back)."""
    global _cache
    _cache = None
    _thaw()


# The kept snapshot is millions of objects that live for a hundred cycles. Left to the cyclic
# collector, each cycle's survivors are walked by its young collections after the cycle (the
# collector is paused during it: scheduler_core.scheduler.gc_paused) and every few cycles a full
# collection walks the whole snapshot: seconds at the L benchmark, in the next cycle's way. So
# each cycle ends by freezing what is alive (gc.freeze: constant time, the objects stay freed by
# reference counting); a full load thaws them and collects once, reclaiming the reference cycles
# the frozen cycles left (at most SCHEDULER_FULL_RELOAD_EVERY cycles' worth: at the M benchmark
# none were found after 10, 20 or 30 kept cycles).
_frozen = [False]


def _thaw() -> int:
    """Give the frozen objects back to the collector and collect them; returns what it freed."""
    if not _frozen[0]:
        return 0
    _frozen[0] = False
    gc.unfreeze()
    return gc.collect()


def _read_head() -> Head:
    with connection.cursor() as cursor:
        cursor.execute(HEAD_SQL, [_shard])
        xmin, running, newest, log, last_run = cursor.fetchone()
        if log is None:  # the row went with a truncate of its own table: start a new epoch
            cursor.execute("INSERT INTO scheduling_changeepoch (id, epoch) VALUES (1, pg_current_xact_id()) "
                           "ON CONFLICT (id) DO NOTHING")
            cursor.execute(EPOCH_SQL)
            log = cursor.fetchone()[0]
    epoch, horizon = log.split(":")
    return Head(int(xmin), list(running), newest or 0, epoch, int(horizon), last_run)


def _stale(cache: Cache | None, key: tuple[str, int | None], head: Head) -> str | None:
    """Why the kept snapshot cannot be brought up to date (None: it can)."""
    if cache is None:
        return "start"
    if cache.key != key:
        return "configuration or database changed"
    if head.epoch != cache.head.epoch:
        return "a tracked table was truncated"
    if head.last_run != cache.last_run:
        return "another process ran a cycle"
    if head.horizon > cache.head.xmin:
        return "the change log was pruned past our last read"
    if 0 < int(getattr(settings, "SCHEDULER_FULL_RELOAD_EVERY", 1800)) <= cache.cycles:
        return "periodic full load"
    return None


def load(now: datetime, config_version: int | None, fresh: bool = False) -> LoadedState:
    """The cluster for a session at `now`: the kept snapshot brought up to date, else a full load.

    `fresh` forces a full load (the session asks for a new snapshot after a failure it could not
    undo). Call inside the cycle's transaction, before anything else reads the tracked tables.
    """
    global _cache, full_loads
    if not enabled():
        return load_state(now)
    head = _read_head()
    key = (str(connection.settings_dict.get("NAME")), config_version)
    reason = "fresh snapshot requested" if fresh else _stale(_cache, key, head)
    if reason is None:
        assert _cache is not None
        try:
            _apply_changes(_cache, head, now)
            return _cache.applier.state
        except Reload as exc:
            reason = str(exc)
    logger.info("scheduler snapshot: full load (%s)", reason)
    full_loads += 1
    _cache = None  # the old snapshot's memory goes before the new one is built
    _thaw()
    _cache = Cache(key=key, applier=Applier.full(now), head=head, last_run=head.last_run)
    _cache.kept = kept_state(_cache.applier.state.snapshot)
    _cache.kept.lasting = True  # kept until the next full load: answers are kept from its first session
    return _cache.applier.state


def _apply_changes(cache: Cache, head: Head, now: datetime) -> None:
    last = cache.head
    with connection.cursor() as cursor:
        cursor.execute(CHANGES_SQL, [last.newest, last.running, head.newest])
        rows = cursor.fetchall()
        if cache.cycles % PRUNE_EVERY == PRUNE_EVERY - 1:
            # Applied: rows up to the previous read's newest id, of transactions finished before it.
            # The newest row stays (the API's data version is the log's newest id: it must never
            # go back to a value seen before).
            cursor.execute("DELETE FROM scheduling_change WHERE id <= %s AND xact < %s::xid8 "
                           "AND id < (SELECT max(id) FROM scheduling_change)", [last.newest, str(last.xmin)])
            cursor.execute("UPDATE scheduling_changeepoch SET horizon = greatest(horizon, %s::xid8) "
                           "WHERE id = 1", [str(last.xmin)])
    changed: dict[str, set[int]] = {}
    own: dict[int, bool] = {}  # job id -> changed by our last cycle's transaction only
    for table, row_id, xact in rows:
        if table == "core_job" and row_id in cache.own:
            own[row_id] = own.get(row_id, True) and xact == cache.own_xact
        else:
            changed.setdefault(table, set()).add(row_id)
    changed.setdefault("core_job", set()).update(pk for pk, only in own.items() if not only)
    applier = cache.applier
    known = {"core_node": applier.node_names, "core_job": applier.job_uids, "core_task": applier.task_uids}
    # Rows the log named are re-read anyway; our own job writes are applied from memory below.
    named = {**changed, "core_job": changed.get("core_job", set()) | set(own)}
    for table, ids in reread.stale_ids(cache.cycles, known, applier.state.row_hashes, named).items():
        changed.setdefault(table, set()).update(ids)
    cache.applier.row_log.begin()
    cache.applier.apply_own_jobs([cache.own[pk] for pk, only in own.items() if only])
    cache.own, cache.own_xact = {}, None
    cache.stats = cache.applier.apply(changed, now)
    cache.head = head
    cache.cycles += 1


def own_jobs(changes: list[Any]) -> None:
    """Remember the job rows this cycle wrote (writes.JobChange, applied) and its transaction id:
    the next cycle applies them as written rather than re-reading them (unless another
    transaction changed them too)."""
    cache = _cache
    if cache is None or not changes:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id()::text")
        cache.own_xact = cursor.fetchone()[0]
    cache.own = {c.id: c for c in changes}


def finish(run_id: int) -> None:
    """Record the CycleRun our cycle wrote (the next cycle checks no one else ran since); freeze
    what is alive (the kept snapshot) out of the cyclic collector's sight until the next full load."""
    if _cache is not None:
        _cache.last_run = run_id
        gc.freeze()
        _frozen[0] = True


def settle(state: LoadedState, result: SessionResult) -> None:
    """Undo in the kept snapshot what the session changed in memory only.

    Job phases go back to their stored values now; tasks the session moved (bound, pipelined,
    evicted, allocated without a bind) and the jobs it set aside are re-read at the next cycle,
    after the cycle's writes (which the change log brings back anyway).
    """
    cache = _cache
    if cache is None or cache.applier.state is not state:
        return
    cache.applier.settle(result)


def row_log(state: LoadedState) -> JobRowLog | None:
    """The log of the job rows the deltas moved, when `state` is the current instance's kept
    snapshot (None: a copy, SQLite: the caller compares every job)."""
    cache = _cache
    if cache is None or cache.applier.state is not state:
        return None
    return cache.applier.row_log


def stats() -> dict[str, Any]:
    """What the last incremental load applied (rows by kind), for logs and the benchmark."""
    return dict(_cache.stats) if _cache is not None else {}

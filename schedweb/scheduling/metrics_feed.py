"""The rows changed since the last /metrics render, from the scheduler's change log (PostgreSQL).

The render after each cycle keeps the job table's counts in memory (schedweb.scheduling.
metrics_counts) and brings them up to date from the rows written since its previous render,
by anyone: the cycle, the API, the agent. Those rows are named by the change log the triggers
of scheduling migration 0004 fill in every writer's own transaction, read here the way the
incremental snapshot reads it (schedweb.scheduling.incremental): the log rows above the newest
id seen at the previous read, plus those of the transactions still running then (their rows
may carry lower ids), up to the newest id seen now. So a late commit is never missed.

A read answers None (doubt: count everything again) when the position cannot be trusted: no
position yet, another database, the log's epoch moved (a tracked table was truncated), the log
was pruned past the position (its horizon passed our snapshot's xmin), or the log's newest id
went back (rows the position had seen were rolled back or restored away).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

# One statement, one snapshot: the newest visible id and the running transactions agree.
HEAD_SQL = ("SELECT pg_snapshot_xmin(s.snap)::text, "
            "ARRAY(SELECT x::text FROM pg_snapshot_xip(s.snap) AS x), "
            "(SELECT id FROM scheduling_change ORDER BY id DESC LIMIT 1), "
            "(SELECT epoch::text || ':' || horizon::text FROM scheduling_changeepoch WHERE id = 1) "
            "FROM (SELECT pg_current_snapshot() AS snap) AS s")
# The scheduling_change rows logged after one position up to another (`window`).
WINDOW_SQL = "(id > %s OR xact = ANY(%s::xid8[])) AND id <= %s"


@dataclass(frozen=True)
class Position:
    """Where a reader stands in the log: what one head statement saw."""

    database: str
    xmin: int
    running: tuple[str, ...]
    newest: int
    epoch: str
    horizon: int


def head() -> Position | None:
    """The log's position now (None: the log has no epoch row yet)."""
    with connection.cursor() as cursor:
        cursor.execute(HEAD_SQL)
        xmin, running, newest, log = cursor.fetchone()
    if log is None:
        return None
    epoch, horizon = log.split(":")
    return Position(str(connection.settings_dict.get("NAME")), int(xmin), tuple(running), newest or 0,
                    epoch, int(horizon))


def trusted(since: Position | None, now: Position) -> bool:
    """Whether the log still holds every row written after `since` (see the module docstring)."""
    return (since is not None and since.database == now.database and since.epoch == now.epoch
            and now.horizon <= since.xmin and now.newest >= since.newest)


def window(since: Position, now: Position) -> tuple[str, list] | None:
    """(WHERE condition, parameters) of the scheduling_change rows logged after `since` up to
    `now` (both trusted); None when there can be none."""
    if now.newest <= since.newest and not since.running:
        return None
    return WINDOW_SQL, [since.newest, list(since.running), now.newest]

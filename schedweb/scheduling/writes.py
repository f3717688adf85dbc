"""Set-based SQL writers of the cycle: one statement per kind of change, never a save() loop.

PostgreSQL: `UPDATE ... FROM unnest(arrays...)` with `RETURNING` (the ids that still matched);
SQLite: `executemany` of the same conditional UPDATE (the cycle holds SQLite's write lock for the
whole transaction, so a row there cannot change under it). Every UPDATE carries the snapshot's
view of the row in its WHERE clause: a row the API changed meanwhile is left alone (a conflict).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from schedweb.core.models import Job, Node, Task
from schedweb.scheduling.models import JobReasonHistory, QueueSample

# Arbitrary constant key of the leader lock (pg_try_advisory_xact_lock takes a bigint).
LEADER_LOCK_KEY = 0x5C4ED_0001
IN_CHUNK = 5000  # ids per IN (...) list: SQLite caps bound variables


def is_postgres() -> bool:
    """True on PostgreSQL (set-based arrays, advisory locks); False on SQLite."""
    return connection.vendor == "postgresql"


def try_leader_lock() -> bool:
    """Take the transaction-scoped leader lock; False when another cycle holds it (SQLite: True).

    Must run inside the cycle's transaction: the lock is released at its COMMIT/ROLLBACK.
    """
    if not is_postgres():
        return True  # one process; BEGIN IMMEDIATE already serializes writers
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LEADER_LOCK_KEY])
        return bool(cursor.fetchone()[0])


def _dt(value: datetime | None) -> object:
    # SQLite stores datetimes as text: compare and write in Django's own format.
    return value if is_postgres() else connection.ops.adapt_datetimefield_value(value)


@dataclass(slots=True)
class TaskChange:
    """Move task `id` from (`old_status`, `old_updated`) to `new_status`; `node_id` when `set_node`."""

    id: int
    old_status: str
    old_updated: str  # the database's text of the row's `updated` (see adapter.AsText)
    new_status: str
    node_id: int | None = None
    set_node: bool = False


def lock_nodes(node_ids: Iterable[int]) -> None:
    """FOR KEY SHARE the target nodes so a concurrent node delete waits for (or precedes) us."""
    ids = sorted(set(node_ids))
    if not ids or not is_postgres():
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Node._meta.db_table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE",
                       [ids])


def update_tasks(changes: Sequence[TaskChange], now: datetime) -> set[int]:
    """Apply task status changes whose row is unchanged since the load; returns the applied ids.

    A bind to a node that no longer exists does not apply either.
    """
    if not changes:
        return set()
    task_t, node_t = Task._meta.db_table, Node._meta.db_table
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute(
                f"UPDATE {task_t} AS t SET status = v.new_status, "
                f"node_id = CASE WHEN v.set_node THEN v.node_id ELSE t.node_id END, updated = %s "
                f"FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::bigint[], "
                f"%s::boolean[]) AS v(id, old_status, old_updated, new_status, node_id, set_node) "
                f"WHERE t.id = v.id AND t.status = v.old_status AND t.updated = v.old_updated::timestamptz "
                f"AND (v.node_id IS NULL OR EXISTS (SELECT 1 FROM {node_t} n WHERE n.id = v.node_id)) "
                f"RETURNING t.id",
                [now, [c.id for c in changes], [c.old_status for c in changes],
                 [c.old_updated for c in changes], [c.new_status for c in changes],
                 [c.node_id for c in changes], [c.set_node for c in changes]])
            return {row[0] for row in cursor.fetchall()}
        else:
            cursor.executemany(
                f"UPDATE {task_t} SET status = %s, node_id = CASE WHEN %s THEN %s ELSE node_id END, "
                f"updated = %s WHERE id = %s AND status = %s AND updated = %s "
                f"AND (%s IS NULL OR EXISTS (SELECT 1 FROM {node_t} n WHERE n.id = %s))",
                [(c.new_status, c.set_node, c.node_id, _dt(now), c.id, c.old_status, c.old_updated,
                  c.node_id, c.node_id) for c in changes])
        # The write lock is ours for the whole transaction: every row still matched.
        return {c.id for c in changes}


@dataclass(slots=True)
class JobChange:
    """New phase and current reason of job `id`, applied only while its phase is `old_phase`."""

    id: int
    old_phase: str
    phase: str
    code: str
    message: str
    details: dict
    since: datetime | None


def update_jobs(changes: Sequence[JobChange], now: datetime) -> set[int]:
    """Apply job phase/reason changes; returns the ids that applied (a cancelled job keeps its phase)."""
    if not changes:
        return set()
    job_t = Job._meta.db_table
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute(
                f"UPDATE {job_t} AS j SET phase = v.phase, reason_code = v.code, reason_message = v.message, "
                f"reason_details = v.details::jsonb, reason_since = v.since, updated = %s "
                f"FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                f"%s::timestamptz[]) AS v(id, old_phase, phase, code, message, details, since) "
                f"WHERE j.id = v.id AND j.phase = v.old_phase RETURNING j.id",
                [now, [c.id for c in changes], [c.old_phase for c in changes], [c.phase for c in changes],
                 [c.code for c in changes], [c.message for c in changes],
                 [json.dumps(c.details, sort_keys=True) for c in changes], [c.since for c in changes]])
            return {row[0] for row in cursor.fetchall()}
        cursor.executemany(
            f"UPDATE {job_t} SET phase = %s, reason_code = %s, reason_message = %s, reason_details = %s, "
            f"reason_since = %s, updated = %s WHERE id = %s AND phase = %s",
            [(c.phase, c.code, c.message, json.dumps(c.details, sort_keys=True), _dt(c.since), _dt(now),
              c.id, c.old_phase) for c in changes])
        # The write lock is ours for the whole transaction: every row still matched.
        return {c.id for c in changes}


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for i in range(0, len(ids), IN_CHUNK):
        yield ids[i:i + IN_CHUNK]


def write_reason_history(changed: Sequence[JobChange], unchanged_ids: Sequence[int], now: datetime) -> int:
    """Close the spans of jobs whose code changed, open new ones, stretch the unchanged ones.

    Returns the number of history rows inserted.
    """
    changed_ids = sorted(c.id for c in changed)
    for chunk in _chunks(changed_ids):
        JobReasonHistory.objects.filter(job_id__in=chunk, current=True).update(current=False)
    for chunk in _chunks(sorted(unchanged_ids)):
        JobReasonHistory.objects.filter(job_id__in=chunk, current=True).update(last_seen=now)
    rows = [JobReasonHistory(job_id=c.id, code=c.code, message=c.message, details=c.details,
                             first_seen=now, last_seen=now, current=True) for c in changed if c.code]
    JobReasonHistory.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def insert_samples(samples: list[QueueSample], previous_cycle_id: int | None) -> None:
    """Insert this cycle's queue samples (multi-row INSERT); only the latest keep `explanation`."""
    if previous_cycle_id is not None:
        QueueSample.objects.filter(cycle_id=previous_cycle_id, explanation__isnull=False).update(
            explanation=None)
    QueueSample.objects.bulk_create(samples, batch_size=1000)

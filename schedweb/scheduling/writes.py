"""Set-based SQL writers of the cycle: one statement per kind of change, never a save() loop.

PostgreSQL: `UPDATE ... FROM` the changes (unnest arrays, or a temp table filled by COPY when
there are many) with `RETURNING` (the ids that still matched). Every UPDATE carries the
snapshot's view of the row in its WHERE clause: a row the API changed meanwhile is left alone (a
conflict). SQLite (the development default) takes the ORM, grouped by new value: the cycle holds
SQLite's write lock for its whole transaction, so no row can change under it and no condition
is needed; it is a development path, not a second implementation of each statement.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from schedweb.core.models import Job, Node, NodeShard, Task
from schedweb.scheduling import sample_copy
from schedweb.scheduling.models import JobReasonHistory, QueueSample, TaskPlacementScores

# Arbitrary constant key of the leader lock (pg_try_advisory_xact_lock takes a bigint).
LEADER_LOCK_KEY = 0x5C4ED_0001
IN_CHUNK = 5000  # ids per IN (...) list: SQLite caps bound variables


def is_postgres() -> bool:
    """True on PostgreSQL (set-based arrays, advisory locks); False on SQLite."""
    return connection.vendor == "postgresql"


def try_leader_lock(key: int = LEADER_LOCK_KEY) -> bool:
    """Take the transaction-scoped leader lock `key` (one per scheduler instance:
    shard_runtime.lock_key); False when another cycle holds it (SQLite: True).

    Must run inside the cycle's transaction: the lock is released at its COMMIT/ROLLBACK.
    """
    if not is_postgres():
        return True  # one process; BEGIN IMMEDIATE already serializes writers
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [key])
        return bool(cursor.fetchone()[0])


def write_shard_in_use(shard: str, nodes: list[str]) -> None:
    """Set NodeShard `shard`'s status `nodes_in_use` (the scheduler's status, like the task
    writes: no service, no version bump)."""
    NodeShard.objects.filter(name=shard).update(nodes_in_use=nodes)


@dataclass(slots=True)
class TaskChange:
    """Move task `id` from (`old_status`, `old_updated`) to `new_status`; `node_id` when `set_node`."""

    id: int
    old_status: str
    old_updated: str  # the database's text of the row's `updated` (see snapshot_sql)
    new_status: str
    node_id: int | None = None
    set_node: bool = False


def lock_jobs(job_ids: Iterable[int]) -> None:
    """Lock (FOR NO KEY UPDATE, in id order) the jobs `job_ids`.

    The project's lock order is a job before its tasks (job_cancel, task_set_status, the agent):
    a writer that changed task rows first and then waited for their job would deadlock with a
    cancel holding the job and waiting for those tasks. Taking every job the cycle will write
    up front, in one id-ordered statement, keeps that order (SQLite: one writer, nothing to do).
    """
    jobs = sorted(set(job_ids))
    if not jobs or not is_postgres():
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {Job._meta.db_table} WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE", [jobs])


def _lock_nodes(node_ids: Iterable[int]) -> set[int]:
    """PostgreSQL: FOR KEY SHARE the target nodes so a concurrent node delete waits for (or
    precedes) us; returns the ids that exist, which then exist until the transaction ends."""
    ids = sorted(set(node_ids))
    if not ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Node._meta.db_table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE",
                       [ids])
        return {row[0] for row in cursor.fetchall()}


# Big change sets travel by COPY into a session-local temp table (emptied at every commit), then
# one `UPDATE ... FROM` it: binding 60,000 array elements as parameters costs several times more.
# Small ones go as unnest() arrays in the UPDATE itself (one round trip instead of four).
COPY_MIN_ROWS = 500
# Rows carrying JSON documents (a reason's details: kilobytes) take COPY from far fewer rows:
# as parameters they are quoted into the statement's text (Django binds on the client) and the
# server parses and casts each one while planning; 700 reworded reasons took 180 ms that way
# against 20 ms of execution.
JSON_COPY_MIN_ROWS = 20
TASK_CHANGES = ("sched_task_changes", "id bigint, old_status text, old_updated timestamptz, "
                "new_status text, node_id bigint, set_node boolean")
JOB_CHANGES = ("sched_job_changes", "id bigint, old_phase text, phase text, code text, message text, "
               "details jsonb, since timestamptz")
# The COPY path sends each distinct details document once (jobs of one shape in one queue wait
# for the same reason): the job rows carry the document's number `k`, PostgreSQL parses each
# document once and the UPDATE joins it in.
JOB_ROWS = ("sched_job_rows", "id bigint, old_phase text, phase text, code text, message text, "
            "k integer, since timestamptz")
JOB_DETAILS = ("sched_job_details", "k integer, details jsonb")


def _change_source(cursor: Any, table: tuple[str, str], rows: list[tuple], min_copy: int | None = None,
                   alias: str = "v") -> tuple[str, list[list]]:
    """The FROM item `alias` of a change set and its parameters (PostgreSQL): `unnest(...)` of one
    array per column for fewer than `min_copy` rows (default COPY_MIN_ROWS), else a temp table
    `table` (name, "col type, ...") filled by COPY.

    The temp table gets no ANALYZE (catalog writes every cycle): the planner sizes it by its pages.
    """
    name, columns = table
    pairs = [c.strip().split(" ", 1) for c in columns.split(",")]
    if len(rows) < (COPY_MIN_ROWS if min_copy is None else min_copy):
        arrays = [list(col) for col in zip(*rows, strict=True)]
        casts = ", ".join(f"%s::{kind}[]" for _, kind in pairs)
        return f"unnest({casts}) AS {alias}({', '.join(n for n, _ in pairs)})", arrays
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} ({columns}) ON COMMIT DELETE ROWS")
    cursor.execute(f"DELETE FROM {name}")  # empty at the start of a cycle; not when a test calls twice
    with cursor.copy(f"COPY {name} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return f"{name} AS {alias}", []


def update_tasks(changes: Sequence[TaskChange], now: datetime) -> set[int]:
    """Apply task status changes whose row is unchanged since the load; returns the applied ids.

    A bind to a node that no longer exists does not apply either.
    """
    if not changes:
        return set()
    if not is_postgres():
        return _orm_update(Task, changes, lambda c: (
            {"status": c.new_status, "node_id": c.node_id} if c.set_node else {"status": c.new_status}), now)
    task_t = Task._meta.db_table
    with connection.cursor() as cursor:
        # Locked target nodes stay until we commit: drop the binds to gone ones here rather
        # than ask the UPDATE to look each node up again.
        nodes = _lock_nodes(c.node_id for c in changes if c.node_id is not None)
        rows = [(c.id, c.old_status, c.old_updated, c.new_status, c.node_id, c.set_node) for c in changes
                if c.node_id is None or c.node_id in nodes]
        if not rows:
            return set()
        source = _change_source(cursor, TASK_CHANGES, rows)
        cursor.execute(
            f"UPDATE {task_t} AS t SET status = v.new_status, "
            f"node_id = CASE WHEN v.set_node THEN v.node_id ELSE t.node_id END, updated = %s "
            f"FROM {source[0]} WHERE t.id = v.id AND t.status = v.old_status "
            f"AND t.updated = v.old_updated RETURNING t.id", [now, *source[1]])
        return {row[0] for row in cursor.fetchall()}


def _orm_update(model: Any, changes: Sequence[Any], values: Any, now: datetime) -> set[int]:
    """SQLite: one ORM `.update()` per distinct set of new values (ids in chunks); every row
    applies, since the cycle holds the database's only write lock."""
    groups: dict[str, tuple[dict, list[int]]] = {}
    for change in changes:
        fields = values(change)
        key = json.dumps(fields, sort_keys=True, default=str)
        groups.setdefault(key, (fields, []))[1].append(change.id)
    for fields, ids in groups.values():
        for chunk in _chunks(ids):
            model.objects.filter(id__in=chunk).update(**fields, updated=now)
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
    # `details` as JSON text when the caller has it (the cycle dumps each job's details once).
    details_text: str | None = None

    def details_json(self) -> str:
        """`details` as JSON text (keys sorted)."""
        if self.details_text is not None:
            return self.details_text
        return json.dumps(self.details, sort_keys=True)


def update_jobs(changes: Sequence[JobChange], now: datetime) -> set[int]:
    """Apply job phase/reason changes; returns the ids that applied (a cancelled job keeps its phase)."""
    if not changes:
        return set()
    if not is_postgres():
        return _orm_update(Job, changes, lambda c: {
            "phase": c.phase, "reason_code": c.code, "reason_message": c.message, "reason_details": c.details,
            "reason_since": c.since}, now)
    job_t = Job._meta.db_table
    sets = ("phase = v.phase, reason_code = v.code, reason_message = v.message, reason_details = {}, "
            "reason_since = v.since, updated = %s")
    with connection.cursor() as cursor:
        if len(changes) < JSON_COPY_MIN_ROWS:
            rows = [(c.id, c.old_phase, c.phase, c.code, c.message, c.details_json(), c.since)
                    for c in changes]
            source, params = _change_source(cursor, JOB_CHANGES, rows, JSON_COPY_MIN_ROWS)
            cursor.execute(f"UPDATE {job_t} AS j SET {sets.format('v.details')} FROM {source} "
                           "WHERE j.id = v.id AND j.phase = v.old_phase RETURNING j.id", [now, *params])
            return {row[0] for row in cursor.fetchall()}
        numbers: dict[str, int] = {}
        rows = [(c.id, c.old_phase, c.phase, c.code, c.message,
                 numbers.setdefault(c.details_json(), len(numbers)), c.since) for c in changes]
        jobs, _ = _change_source(cursor, JOB_ROWS, rows, 0)
        details, _ = _change_source(cursor, JOB_DETAILS, [(k, text) for text, k in numbers.items()], 0, "d")
        cursor.execute(f"UPDATE {job_t} AS j SET {sets.format('d.details')} FROM {jobs} JOIN {details} "
                       "ON d.k = v.k WHERE j.id = v.id AND j.phase = v.old_phase RETURNING j.id", [now])
        return {row[0] for row in cursor.fetchall()}


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for i in range(0, len(ids), IN_CHUNK):
        yield ids[i:i + IN_CHUNK]


def write_reason_history(changed: Sequence[JobChange], unchanged_ids: Sequence[int], now: datetime,
                         reworded: Sequence[JobChange] = ()) -> int:
    """Close the spans of jobs whose code changed, open new ones, stretch the unchanged ones;
    `reworded` jobs keep their code but the current span takes their new message and details
    (the figures a reason quotes are the latest cycle's, in the history as on the job): call it
    after `update_jobs` wrote them, PostgreSQL copies them from the job rows.

    Returns the number of history rows inserted.
    """
    changed_ids = sorted(c.id for c in changed)
    if is_postgres():
        # One statement per kind, ids as one array (no IN lists, no chunking); a span is written
        # once: a reworded one takes its new text and its `last_seen` in the same row version.
        table = JobReasonHistory._meta.db_table
        reworded_ids = sorted({c.id for c in reworded})
        stretched = set(unchanged_ids)
        with connection.cursor() as cursor:
            if changed_ids:
                cursor.execute(f"UPDATE {table} SET current = false WHERE current AND job_id = ANY(%s)",
                               [changed_ids])
            if stretch := sorted(stretched.difference(reworded_ids)):
                cursor.execute(f"UPDATE {table} SET last_seen = %s WHERE current AND job_id = ANY(%s)",
                               [now, stretch])
            if reworded_ids:
                # From the job rows update_jobs just wrote: the same text, without sending the
                # details again (kilobytes a job, every waiting job in most cycles).
                both = sorted(stretched.intersection(reworded_ids))
                cursor.execute(
                    f"UPDATE {table} t SET message = j.reason_message, details = j.reason_details, "
                    "last_seen = CASE WHEN t.job_id = ANY(%s) THEN %s ELSE t.last_seen END "
                    f"FROM {Job._meta.db_table} j WHERE t.current AND t.job_id = j.id AND j.id = ANY(%s)",
                    [both, now, reworded_ids])
    else:
        for chunk in _chunks(changed_ids):
            JobReasonHistory.objects.filter(job_id__in=chunk, current=True).update(current=False)
        for chunk in _chunks(sorted(unchanged_ids)):
            JobReasonHistory.objects.filter(job_id__in=chunk, current=True).update(last_seen=now)
        for c in reworded:  # the development path (SQLite): one UPDATE per job
            JobReasonHistory.objects.filter(job_id=c.id, current=True).update(message=c.message,
                                                                             details=c.details)
    opened = [c for c in changed if c.code]
    if is_postgres() and len(opened) >= JSON_COPY_MIN_ROWS:
        # One COPY: bulk_create would quote every details document into the statement's text.
        columns = "job_id, code, message, details, first_seen, last_seen, current"
        with connection.cursor() as cursor, cursor.copy(
                f"COPY {JobReasonHistory._meta.db_table} ({columns}) FROM STDIN") as copy:
            for c in opened:
                copy.write_row((c.id, c.code, c.message, c.details_json(), now, now, True))
        return len(opened)
    JobReasonHistory.objects.bulk_create(
        [JobReasonHistory(job_id=c.id, code=c.code, message=c.message, details=c.details, first_seen=now,
                          last_seen=now, current=True) for c in opened], batch_size=1000)
    return len(opened)


SAMPLE_LINES_PER_WRITE = 128


def insert_samples(samples: Sequence[Any], previous_cycle_id: int | None) -> list[dict[str, object]]:
    """Insert this cycle's queue samples (sample_copy.Sample or QueueSample objects); only the
    latest keep `explanation`. Returns each sample's JSON columns as the database gives them
    back (decoded from the text written).

    PostgreSQL: one COPY of text kept per queue while its values hold (sample_copy: no model
    instance, no driver formatting of an unchanged row); SQLite: a multi-row INSERT.
    """
    if previous_cycle_id is not None:
        QueueSample.objects.filter(cycle_id=previous_cycle_id, explanation__isnull=False).update(
            explanation=None)
    if not is_postgres():
        QueueSample.objects.bulk_create([s if isinstance(s, QueueSample) else QueueSample(**s.fields())
                                         for s in samples], batch_size=1000)
        return [{name: None if (value := getattr(sample, name)) is None else json.loads(json.dumps(value))
                 for name in sample_copy.JSON_COLUMNS} for sample in samples]
    stored: list[dict[str, object]] = []
    if not samples:
        return stored
    columns = ", ".join(sample_copy.SAMPLE_COLUMNS)
    lines: list[str] = []
    with connection.cursor() as cursor, cursor.copy(
            f"COPY {QueueSample._meta.db_table} ({columns}) FROM STDIN") as copy:
        for line, decoded in sample_copy.copy_lines(list(samples)):
            lines.append(line)
            stored.append(decoded)
            if len(lines) == SAMPLE_LINES_PER_WRITE:  # the server parses them while we go on
                copy.write("".join(lines))
                lines.clear()
        if lines:
            copy.write("".join(lines))
    return stored


# A placement's node scores, in PLACEMENT_COLUMNS order (schedweb.scheduling.placement_scores);
# the two JSON columns already as JSON text (the COPY sends them as they are).
PLACEMENT_COLUMNS = ("cycle_id", "job_id", "task_name", "node", "pipelined", "action", "chosen_scores", "top")
PlacementRow = tuple[int, int, str, str, bool, str, str | None, str]


def insert_placement_scores(rows: Sequence[PlacementRow]) -> None:
    """Insert one cycle's TaskPlacementScores: PostgreSQL one COPY, SQLite a multi-row INSERT."""
    if not rows:
        return
    if not is_postgres():
        TaskPlacementScores.objects.bulk_create(
            [TaskPlacementScores(**dict(zip(PLACEMENT_COLUMNS[:6], row[:6], strict=True)),
                                 chosen_scores=None if row[6] is None else json.loads(row[6]),
                                 top=json.loads(row[7])) for row in rows], batch_size=1000)
        return
    with connection.cursor() as cursor, cursor.copy(
            f"COPY {TaskPlacementScores._meta.db_table} ({', '.join(PLACEMENT_COLUMNS)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)

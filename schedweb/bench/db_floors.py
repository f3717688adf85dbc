"""The database's own floor under a cycle (schedweb.bench.db_bench): the load's statements through
raw psycopg, a raw COPY and a raw UPDATE of as many rows as the cycle wrote."""

from __future__ import annotations

import time
from typing import Any


def raw_read_floor(conn: Any) -> tuple[float, int]:
    """Re-run the load's own SQL through raw psycopg; (seconds, rows) of the fastest of 3."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from schedweb.scheduling.adapter import load_state

    with transaction.atomic(), CaptureQueriesContext(connection) as ctx:
        load_state(timezone.now())
    sqls = [q["sql"] for q in ctx.captured_queries]
    best, rows = float("inf"), 0
    for _ in range(3):
        t = time.perf_counter()
        rows = 0
        with conn.cursor() as cur:
            for sql in sqls:
                rows += len(cur.execute(sql).fetchall())
        conn.rollback()
        best = min(best, time.perf_counter() - t)
    return best, rows


def raw_copy_floor(conn: Any, rows: int) -> float:
    """COPY `rows` task-update-sized rows into a temp table and commit; fastest of 3 (seconds)."""
    best = float("inf")
    data = [(i, "Binding", i % 1000 + 1, "2026-01-01T00:00:00Z", "", "{}") for i in range(rows)]
    for _ in range(3):
        t = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute("CREATE TEMP TABLE floor_copy (id bigint, status text, node_id bigint, "
                        "updated timestamptz, message text, details jsonb) ON COMMIT DROP")
            with cur.copy("COPY floor_copy FROM STDIN") as cp:
                for row in data:
                    cp.write_row(row)
        conn.commit()
        best = min(best, time.perf_counter() - t)
    return best


def raw_update_floor(conn: Any, rows: int) -> float:
    """UPDATE `rows` core_task rows the way a bind does (status, node, `updated`) in one plain
    statement, rolled back; fastest of 3 (seconds). The database's own cost of the cycle's main
    write: every index of core_task gets a new entry per row (not a HOT update)."""
    best = float("inf")
    ids = [r[0] for r in conn.execute("SELECT id FROM core_task ORDER BY id LIMIT %s", (rows,)).fetchall()]
    conn.rollback()
    for _ in range(3):
        t = time.perf_counter()
        with conn.cursor() as cur:
            cur.execute("UPDATE core_task SET status = CASE WHEN status = 'Binding' THEN 'Pending' "
                        "ELSE 'Binding' END, node_id = COALESCE(node_id, 1), updated = now() "
                        "WHERE id = ANY(%s)", (ids,))
        best = min(best, time.perf_counter() - t)
        conn.rollback()
    return best

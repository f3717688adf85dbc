"""The change log of the scheduler's tables (PostgreSQL), written by triggers in the writers' own
transactions, read by the incremental snapshot (schedweb.scheduling.incremental).

Every INSERT, UPDATE and DELETE of priority classes, queues, nodes, namespace quotas, jobs and
tasks, whoever runs it (ORM, raw SQL, COPY), adds one `scheduling_change` row per changed row
(table name, row id, the writing transaction's id) through a statement trigger over its
transition table: one INSERT ... SELECT per statement, not a trigger call per row. A TRUNCATE
of any of them moves `scheduling_changeepoch.epoch` (readers then load everything again). The
reader applies, each cycle, the log rows newer than the newest it saw at its previous read, plus
those of the transactions that were still running then (their rows may carry older ids): so a
late commit is never missed and no row is applied twice. SQLite (the development default) has no log: it loads everything every cycle.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLES = ("core_priorityclass", "core_queue", "core_node", "core_namespacequota", "core_job", "core_task")
EVENTS = (("ins", "INSERT", "NEW"), ("upd", "UPDATE", "NEW"), ("del", "DELETE", "OLD"))

FORWARD = [
    """CREATE TABLE scheduling_change (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tbl text NOT NULL,
        row_id bigint NOT NULL,
        xact xid8 NOT NULL DEFAULT pg_current_xact_id())""",
    # The reader asks for the rows of transactions that were running at its previous read.
    "CREATE INDEX scheduling_change_xact ON scheduling_change (xact)",
    """CREATE TABLE scheduling_changeepoch (
        id smallint PRIMARY KEY CHECK (id = 1),
        epoch xid8 NOT NULL,
        horizon xid8 NOT NULL DEFAULT '0')""",
    "INSERT INTO scheduling_changeepoch (id, epoch) VALUES (1, pg_current_xact_id())",
    """CREATE FUNCTION scheduling_track_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO scheduling_change (tbl, row_id) SELECT TG_TABLE_NAME, id FROM changed_rows;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION scheduling_track_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO scheduling_changeepoch (id, epoch) VALUES (1, pg_current_xact_id())
            ON CONFLICT (id) DO UPDATE SET epoch = EXCLUDED.epoch;
        RETURN NULL;
    END $$""",
]
for _table in TABLES:
    for _suffix, _event, _which in EVENTS:
        FORWARD.append(f"CREATE TRIGGER scheduling_change_{_suffix} AFTER {_event} ON {_table} "
                       f"REFERENCING {_which} TABLE AS changed_rows FOR EACH STATEMENT "
                       f"EXECUTE FUNCTION scheduling_track_change()")
    FORWARD.append(f"CREATE TRIGGER scheduling_change_trunc AFTER TRUNCATE ON {_table} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION scheduling_track_truncate()")

BACKWARD = [f"DROP TRIGGER IF EXISTS scheduling_change_{s} ON {t}"
            for t in TABLES for s in ("ins", "upd", "del", "trunc")] + [
    "DROP FUNCTION IF EXISTS scheduling_track_change()",
    "DROP FUNCTION IF EXISTS scheduling_track_truncate()",
    "DROP TABLE IF EXISTS scheduling_change",
    "DROP TABLE IF EXISTS scheduling_changeepoch",
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):
    """Change log tables, trigger functions and triggers (PostgreSQL only; no model change)."""

    dependencies = [("scheduling", "0003_cyclerun_job_errors_agent_error"),
                    ("core", "0004_job_idempotency_hash_task_topology_spread")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]

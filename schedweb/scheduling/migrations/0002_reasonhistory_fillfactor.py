"""Room on each page of the reason history for its per-cycle `last_seen` updates (PostgreSQL).

Every cycle rewrites `last_seen` of every waiting job's current span. `last_seen` is in no
index, so with free room on the page the new row version is a HOT update: no new entry in any
of the table's three indexes, and the old version is pruned in place. Full pages (the default
fillfactor 100) force every such update to a new page plus three index insertions.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLE = "scheduling_jobreasonhistory"


def set_fillfactor(apps: Any, schema_editor: Any) -> None:
    """fillfactor 50 on PostgreSQL (SQLite has no such setting)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} SET (fillfactor = 50)")


def reset_fillfactor(apps: Any, schema_editor: Any) -> None:
    """Back to the default fillfactor."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} RESET (fillfactor)")


class Migration(migrations.Migration):
    """Sets the reason history's fillfactor (no model change)."""

    dependencies = [("scheduling", "0001_initial")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]

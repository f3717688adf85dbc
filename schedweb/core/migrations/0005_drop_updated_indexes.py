"""The API's data version comes from the scheduler's change log (scheduling 0004), no longer from
the newest `updated` of jobs and tasks: their `updated` indexes go. Each was one more index entry
for every job and task row any writer changed (the cycle changes hundreds per period), and the
job one kept reason-only job updates from being HOT. core_job gets room on its pages for those
HOT updates (fillfactor 90; PostgreSQL only, applies to pages written from now on).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def set_fillfactor(apps: Any, schema_editor: Any) -> None:
    """fillfactor 90 on core_job (PostgreSQL; SQLite has no such setting)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE core_job SET (fillfactor = 90)")


def reset_fillfactor(apps: Any, schema_editor: Any) -> None:
    """Back to the default fillfactor."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE core_job RESET (fillfactor)")


class Migration(migrations.Migration):
    """Drops job_updated_idx and task_updated_idx; core_job fillfactor 90."""

    dependencies = [("core", "0004_job_idempotency_hash_task_topology_spread")]

    operations = [
        migrations.RemoveIndex(model_name="job", name="job_updated_idx"),
        migrations.RemoveIndex(model_name="task", name="task_updated_idx"),
        migrations.RunPython(set_fillfactor, reset_fillfactor),
    ]

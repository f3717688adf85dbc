"""Pod specs stored once per distinct content (`TaskSpec`), referenced by every task that has it.

Moves each task's node_selector, tolerations, affinity, topology_spread_constraints and labels
into the spec rows (one per distinct set of values, digest as schedweb.core.task_spec_values
computes it), then drops the task columns. Reversible: going back copies each spec onto its tasks.
"""

from __future__ import annotations

import json

import django.db.models.deletion
from django.db import migrations, models

from schedweb.core.task_spec_values import SPEC_FIELDS, spec_digest, spec_values

def _loads(text):
    if text is None:
        return None
    return json.loads(text) if isinstance(text, str) else text


def move_to_specs(apps, schema_editor):
    """One spec row per distinct spec; every task points at its own."""
    conn = schema_editor.connection
    TaskSpec = apps.get_model("core", "TaskSpec")
    as_text = ", ".join(f"CAST({c} AS text)" for c in SPEC_FIELDS)
    with conn.cursor() as cursor:
        # Grouped by the database's own text of each value (jsonb prints equal values alike).
        cursor.execute(f"SELECT {as_text} FROM core_task GROUP BY {as_text}")
        groups = cursor.fetchall()
    by_digest: dict[str, int] = {}
    mapping = []  # (the texts of a group, its spec id)
    for row in groups:
        texts = tuple(row)
        values = spec_values(dict(zip(SPEC_FIELDS, map(_loads, texts), strict=True)))
        digest = spec_digest(values)
        if digest not in by_digest:
            by_digest[digest] = TaskSpec.objects.create(digest=digest, **values).pk
        mapping.append((texts, by_digest[digest]))
    if not mapping:
        return
    # '' is no JSON text: it stands for NULL on both sides, so the join can hash.
    keys = " AND ".join(f"coalesce(CAST(t.{c} AS text), '') = m.c{i}" for i, c in enumerate(SPEC_FIELDS))
    with conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            cols = ", ".join(f"c{i}" for i in range(len(SPEC_FIELDS)))
            arrays = ", ".join(["%s::text[]"] * len(SPEC_FIELDS))
            cursor.execute(f"UPDATE core_task t SET spec_id = m.spec_id FROM unnest({arrays}, %s::bigint[]) "
                           f"AS m({cols}, spec_id) WHERE {keys}",
                           [*([t[i] or "" for t, _ in mapping] for i in range(len(SPEC_FIELDS))),
                            [pk for _, pk in mapping]])
        else:
            where = " AND ".join(f"coalesce(CAST({c} AS text), '') = %s" for c in SPEC_FIELDS)
            for texts, pk in mapping:
                cursor.execute(f"UPDATE core_task SET spec_id = %s WHERE {where}",
                               [pk, *(t or "" for t in texts)])


def copy_back(apps, schema_editor):
    """Each task's columns from its spec (the columns exist again at this point)."""
    sets = ", ".join(f"{c} = s.{c}" for c in SPEC_FIELDS)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"UPDATE core_task SET {sets} FROM core_taskspec s WHERE s.id = core_task.spec_id")


class Migration(migrations.Migration):
    dependencies = [("core", "0009_job_suspended")]

    operations = [
        migrations.CreateModel(
            name="TaskSpec",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("node_selector", models.JSONField(blank=True, default=dict)),
                ("tolerations", models.JSONField(blank=True, default=list)),
                ("affinity", models.JSONField(blank=True, null=True)),
                ("topology_spread_constraints", models.JSONField(blank=True, default=list)),
                ("labels", models.JSONField(blank=True, default=dict)),
            ],
        ),
        migrations.AddField(
            model_name="task", name="spec",
            field=models.ForeignKey(null=True, db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="tasks", to="core.taskspec"),
        ),
        migrations.RunPython(move_to_specs, copy_back),
        migrations.AlterField(
            model_name="task", name="spec",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="tasks", to="core.taskspec"),
        ),
        *(migrations.RemoveField(model_name="task", name=name) for name in SPEC_FIELDS),
    ]

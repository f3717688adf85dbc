"""TaskPlacementScores' foreign keys also cascade in PostgreSQL itself (ON DELETE CASCADE): the rows
go with their job or cycle whoever deletes it, raw SQL included (the benchmarks clear jobs so).

A migration of its own: Django adds a new table's foreign keys at the end of the migration that
creates it. SQLite keeps the ORM's cascade alone, as for every other table.
"""

from django.db import migrations

TABLE = "scheduling_taskplacementscores"
# Each foreign key of TABLE re-created with ON DELETE CASCADE (Django's names and deferral kept).
CASCADE = rf"""
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
           WHERE conrelid = '{TABLE}'::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE {TABLE} DROP CONSTRAINT %I', c.conname);
    EXECUTE format('ALTER TABLE {TABLE} ADD CONSTRAINT %I %s', c.conname,
                   regexp_replace(c.def, '\)( DEFERRABLE|$)', ') ON DELETE CASCADE\1'));
  END LOOP;
END $$;
"""


def db_cascade(apps, schema_editor) -> None:
    """PostgreSQL only."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CASCADE, params=None)  # no placeholders: %I and %s are format()'s


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0007_placement_scores")]

    operations = [migrations.RunPython(db_cascade, migrations.RunPython.noop)]

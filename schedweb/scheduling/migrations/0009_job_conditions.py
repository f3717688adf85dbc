"""JobCondition: a job's PodGroup conditions, one row per job and type (written by the cycle).

The foreign key to the job is declared without a Django constraint and created here with
ON DELETE CASCADE in PostgreSQL, so the rows go with their job whoever deletes it (raw SQL too);
SQLite keeps the ORM's cascade alone, as for every other table.
"""

import django.db.models.deletion
from django.db import migrations, models

TABLE = "scheduling_jobcondition"
FOREIGN_KEY = (f"ALTER TABLE {TABLE} ADD CONSTRAINT {TABLE}_job_id_fk FOREIGN KEY (job_id) "
               "REFERENCES core_job (id) ON DELETE CASCADE")


def db_cascade(apps, schema_editor) -> None:
    """PostgreSQL only."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FOREIGN_KEY, params=None)


class Migration(migrations.Migration):
    dependencies = [("core", "0007_default_queue"), ("scheduling", "0008_placement_scores_db_cascade")]

    operations = [
        migrations.CreateModel(
            name="JobCondition",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("type", models.CharField(max_length=32)),
                ("status", models.CharField(default="True", max_length=8)),
                ("reason", models.CharField(blank=True, default="", max_length=64)),
                ("message", models.TextField(blank=True, default="")),
                ("last_transition_time", models.DateTimeField()),
                ("job", models.ForeignKey(db_constraint=False, db_index=False,
                                          on_delete=django.db.models.deletion.CASCADE,
                                          related_name="conditions", to="core.job")),
            ],
            options={"ordering": ["job_id", "type"]},
        ),
        migrations.AddConstraint(
            model_name="jobcondition",
            constraint=models.UniqueConstraint(fields=("job", "type"),
                                               name="scheduling_jobcondition_job_type"),
        ),
        migrations.RunPython(db_cascade, migrations.RunPython.noop),
    ]

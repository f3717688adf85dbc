"""Job phase `Aborted` (a suspended job, shown as "Suspended"): only the column's choices change."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0008_queue_version")]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="phase",
            field=models.CharField(
                choices=[("Pending", "Pending"), ("Inqueue", "Inqueue"), ("Running", "Running"),
                         ("Unknown", "Unknown"), ("Completed", "Completed"), ("Cancelled", "Cancelled"),
                         ("Aborted", "Suspended")],
                default="Pending", max_length=10),
        ),
    ]

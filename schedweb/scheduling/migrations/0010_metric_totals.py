"""MetricTotal: the running totals of /metrics' counters and histograms (never pruned).

Totals start at zero on upgrade (Prometheus reads that as one counter reset); from then on they
only grow, whatever prune_history deletes.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0009_job_conditions"),
    ]

    operations = [
        migrations.CreateModel(
            name="MetricTotal",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("name", models.CharField(max_length=128)),
                ("labels", models.CharField(default="{}", max_length=255)),
                ("sample", models.CharField(default="", max_length=32)),
                ("value", models.FloatField(default=0.0)),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("name", "labels", "sample"),
                                                        name="metrictotal_key")],
            },
        ),
    ]

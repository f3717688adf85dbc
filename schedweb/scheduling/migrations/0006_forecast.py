"""Forecasts (issue 20): ForecastRun per run, JobForecast per waiting job (replaced by each run)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0007_default_queue"), ("scheduling", "0005_cyclerun_timing")]

    operations = [
        migrations.CreateModel(
            name="ForecastRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("computed_at", models.DateTimeField(db_index=True)),
                ("until", models.DateTimeField(blank=True, null=True)),
                ("cycles", models.PositiveIntegerField(default=0)),
                ("stop", models.CharField(blank=True, default="", max_length=16)),
                ("jobs", models.PositiveIntegerField(default=0)),
                ("load_seconds", models.FloatField(default=0.0)),
                ("forecast_seconds", models.FloatField(default=0.0)),
                ("cpu_seconds", models.FloatField(default=0.0)),
                ("store_seconds", models.FloatField(default=0.0)),
                ("errors", models.TextField(blank=True, default="")),
            ],
            options={"ordering": ["-computed_at", "-id"]},
        ),
        migrations.CreateModel(
            name="JobForecast",
            fields=[
                ("job", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                             related_name="forecast", serialize=False, to="core.job")),
                ("estimated_start", models.DateTimeField(blank=True, null=True)),
                ("estimate_basis", models.CharField(max_length=16)),
                ("computed_at", models.DateTimeField()),
                ("until", models.DateTimeField()),
            ],
            options={"ordering": ["job_id"]},
        ),
    ]

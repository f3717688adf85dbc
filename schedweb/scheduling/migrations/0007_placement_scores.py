"""Node scores of the cycle's placements (issue 17 rule 9): TaskPlacementScores, and on CycleRun
the snapshot's pending tasks and whether the cycle recorded scores."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0007_default_queue"), ("scheduling", "0006_forecast")]

    operations = [
        migrations.AddField(model_name="cyclerun", name="pending_tasks",
                            field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="cyclerun", name="scores_recorded",
                            field=models.BooleanField(default=False)),
        migrations.CreateModel(
            name="TaskPlacementScores",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("task_name", models.CharField(max_length=253)),
                ("node", models.CharField(max_length=253)),
                ("pipelined", models.BooleanField(default=False)),
                ("action", models.CharField(blank=True, default="", max_length=16)),
                ("chosen_scores", models.JSONField(blank=True, null=True)),
                ("top", models.JSONField(blank=True, default=list)),
                ("cycle", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="placement_scores", to="scheduling.cyclerun")),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                          related_name="placement_scores", to="core.job")),
            ],
            options={"ordering": ["job_id", "task_name", "-cycle_id"],
                     "verbose_name_plural": "task placement scores"},
        ),
    ]

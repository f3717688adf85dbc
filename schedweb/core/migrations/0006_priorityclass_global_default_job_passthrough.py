"""PriorityClass.global_default (Kubernetes' globalDefault: at most one class, a partial unique
constraint) and Job.passthrough (manifest fields stored and exported back unchanged)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    """Adds priorityclass.global_default, its one-default constraint and job.passthrough."""

    dependencies = [("core", "0005_drop_updated_indexes")]

    operations = [
        migrations.AddField(model_name="priorityclass", name="global_default",
                            field=models.BooleanField(default=False)),
        migrations.AddConstraint(
            model_name="priorityclass",
            constraint=models.UniqueConstraint(condition=models.Q(global_default=True), fields=("global_default",),
                                               name="priority_class_one_global_default"),
        ),
        migrations.AddField(model_name="job", name="passthrough",
                            field=models.JSONField(blank=True, default=dict)),
    ]

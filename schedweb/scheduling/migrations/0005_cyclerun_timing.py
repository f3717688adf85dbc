"""CycleRun.timing: the session's timings (per action), for Volcano's latency histograms."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0004_change_log")]

    operations = [
        migrations.AddField(model_name="cyclerun", name="timing",
                            field=models.JSONField(blank=True, default=dict)),
    ]

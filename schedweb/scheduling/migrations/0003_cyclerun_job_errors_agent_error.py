from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0002_reasonhistory_fillfactor")]

    operations = [
        migrations.AddField(model_name="cyclerun", name="job_errors",
                            field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="cyclerun", name="agent_error",
                            field=models.TextField(blank=True, default="")),
    ]

"""The prerendered /metrics body (MetricsBody): one row the cycle replaces after each commit."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduling", "0010_metric_totals")]

    operations = [
        migrations.CreateModel(
            name="MetricsBody",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("cycle_id", models.BigIntegerField()),
                ("rendered", models.DateTimeField()),
                ("last_success", models.DateTimeField(null=True)),
                ("body", models.TextField()),
            ],
        ),
    ]

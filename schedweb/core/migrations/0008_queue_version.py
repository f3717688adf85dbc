"""Queue.version: the optimistic version every service write bumps (ETag / If-Match on the API,
the queue edit form's hidden field). Existing queues start at 1."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    """Add core.Queue.version."""

    dependencies = [("core", "0007_default_queue")]

    operations = [migrations.AddField(model_name="queue", name="version",
                                      field=models.PositiveIntegerField(default=1))]

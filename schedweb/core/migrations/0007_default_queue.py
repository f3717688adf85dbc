"""The default queue (settings.DEFAULT_QUEUE, "default"): created when absent, as Volcano creates
its `default` queue at install (reclaimable, weight 1, Open). Jobs and manifests naming no queue
go there. Reversing leaves the queue in place (it may hold jobs by then)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import migrations


def create_default_queue(apps: Any, schema_editor: Any) -> None:
    """Create the default queue unless a queue of that name exists."""
    Queue = apps.get_model("core", "Queue")
    name = getattr(settings, "DEFAULT_QUEUE", "default")
    Queue.objects.using(schema_editor.connection.alias).get_or_create(
        name=name, defaults={"weight": 1, "reclaimable": True, "state": "Open", "priority": 0, "annotations": {}})


class Migration(migrations.Migration):
    """Data migration: the default queue."""

    dependencies = [("core", "0006_priorityclass_global_default_job_passthrough")]

    operations = [migrations.RunPython(create_default_queue, migrations.RunPython.noop)]

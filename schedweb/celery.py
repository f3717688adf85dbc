"""Celery app (`celery -A schedweb worker -B`): the scheduling cycle every SCHEDULE_PERIOD seconds
and the sharding controller every SHARD_CONTROLLER_PERIOD seconds."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "schedweb.settings")

app = Celery("schedweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["schedweb.scheduling"])
# The sharding controller's task lives beside its policy (schedweb.scheduling.shard_controller).
app.autodiscover_tasks(["schedweb.scheduling"], related_name="shard_controller")


@app.on_after_configure.connect
def setup_beat(sender: Celery, **_: object) -> None:
    """Beat entry: expires = period, so cycles missed while the worker was busy never pile up."""
    from django.conf import settings

    period = float(settings.SCHEDULE_PERIOD)
    shards = list(getattr(settings, "SCHEDULER_SHARDS", []))
    if not shards:  # one unsharded instance (queue `scheduler`)
        sender.add_periodic_task(period, sender.signature("schedweb.scheduling.cycle"),
                                 name="scheduling-cycle", expires=period)
    for shard in shards:  # one instance per shard, each on its own queue (its own worker)
        sender.add_periodic_task(period, sender.signature("schedweb.scheduling.cycle", args=(shard,),
                                                          queue=f"scheduler-{shard}"),
                                 name=f"scheduling-cycle-{shard}", expires=period)
    shards_period = float(settings.SHARD_CONTROLLER_PERIOD)
    sender.add_periodic_task(shards_period, sender.signature("schedweb.scheduling.shard_controller"),
                             name="shard-controller", expires=shards_period)

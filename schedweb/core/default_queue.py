"""The default queue and the global default priority class: what a job that names none gets.

Volcano creates a `default` queue at install (and its scheduler re-creates it when missing);
jobs without `spec.queue` go there. Kubernetes' priority admission gives a pod without a
priorityClassName the class marked `globalDefault`. schedweb applies both at submit time
(schedweb.core.job_services.job_submit) and in the manifest import.
"""

from __future__ import annotations

from django.conf import settings

from schedweb.core.models import PriorityClass, Queue, QueueState


def default_queue_name() -> str:
    """settings.DEFAULT_QUEUE (env, default "default")."""
    return str(getattr(settings, "DEFAULT_QUEUE", "default") or "default")


def ensure_default_queue() -> Queue:
    """The default queue, created as core migration 0007 creates it when absent (reclaimable,
    weight 1, Open): a database restored without it, or emptied by a test, still has one."""
    queue, _ = Queue.objects.get_or_create(
        name=default_queue_name(),
        defaults={"weight": 1, "reclaimable": True, "state": QueueState.OPEN, "priority": 0,
                  "annotations": {}})
    return queue


def global_default_priority_class() -> PriorityClass | None:
    """The class marked globalDefault (at most one: a partial unique constraint), or None."""
    return PriorityClass.objects.filter(global_default=True).first()

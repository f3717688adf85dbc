"""Reads of the cluster objects that are more than one queryset."""

from __future__ import annotations

from django.db.models import QuerySet

from schedweb.core.models import TERMINAL_TASK_STATUSES, Queue, SchedulerConfig, Task


def active_scheduler_config() -> SchedulerConfig | None:
    """The active configuration version, or None before any was stored."""
    return SchedulerConfig.objects.filter(active=True).first()


def leaf_queues() -> QuerySet[Queue]:
    """Queues without children (the only ones that hold jobs)."""
    return Queue.objects.filter(children__isnull=True)


def namespace_used(namespace: str) -> dict[str, float]:
    """Sum of the requests (stored units) of the namespace's unfinished tasks."""
    used: dict[str, float] = {}
    rows = Task.objects.filter(job__namespace=namespace).exclude(status__in=TERMINAL_TASK_STATUSES)
    for request in rows.values_list("request", flat=True):
        for key, value in (request or {}).items():
            used[key] = used.get(key, 0.0) + float(value)
    return used

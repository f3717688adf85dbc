"""Reads of the cluster objects that are more than one queryset."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Count

from schedweb.core.models import TERMINAL_TASK_STATUSES, Task


def add_scaled(total: dict[str, float], resources: Mapping[str, Any] | None, times: float) -> None:
    """total += resources * times, per resource name (stored units)."""
    for name, value in (resources or {}).items():
        total[name] = total.get(name, 0) + float(value) * times


def namespace_used(namespaces: list[str]) -> dict[str, dict[str, float]]:
    """Stored-unit sums of the unfinished tasks' requests per namespace, in one grouped query."""
    used: dict[str, dict[str, float]] = {ns: {} for ns in namespaces}
    rows = (
        Task.objects.filter(job__namespace__in=namespaces).exclude(status__in=TERMINAL_TASK_STATUSES)
        .values("job__namespace", "request").annotate(n=Count("id")).order_by()
    )
    for row in rows:
        add_scaled(used[row["job__namespace"]], row["request"], row["n"])
    return used

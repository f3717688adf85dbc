"""Reads of the scheduling records that the API and the dashboard share."""

from __future__ import annotations

from typing import Any

from schedweb.scheduling.models import QueueSample

SAMPLE_FIELDS = ("queue", "cycle_id", "deserved", "allocated", "request", "inqueue", "elastic", "capability",
                 "real_capability", "guarantee", "share", "overused", "explanation")


def latest_samples(fields: tuple[str, ...] = SAMPLE_FIELDS) -> dict[str, dict[str, Any]]:
    """Per queue name, the figures of the newest cycle that recorded samples (one query).

    Keys: `fields` (default all: deserved, allocated, request, inqueue, elastic, capability,
    real_capability, guarantee (stored units or None), share, overused, explanation, cycle_id).
    Ask for fewer when the explanations (kilobytes of JSON per queue) are not needed.
    """
    latest = QueueSample.objects.order_by("-cycle_id").values_list("cycle_id", flat=True)[:1]
    names = ("queue", *(f for f in fields if f != "queue"))
    rows = QueueSample.objects.filter(cycle_id__in=latest).values(*names)
    return {row["queue"]: row for row in rows}

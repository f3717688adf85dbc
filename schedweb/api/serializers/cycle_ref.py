"""The cycle a body reflects: `cycle: {id, started}` of the job bodies (and its schema)."""

from __future__ import annotations

from rest_framework import serializers


class CycleRefSerializer(serializers.Serializer):
    """Which scheduling cycle a body reflects (schema only)."""

    id = serializers.IntegerField(help_text="The cycle's id (GET /api/v1/cycles/{id}/)")
    started = serializers.DateTimeField(help_text="When the cycle started")


def newest_cycle() -> dict | None:
    """{id, started} of the newest cycle that wrote its decisions (neither skipped nor failed),
    None before the first. A cycle commits its decisions and its CycleRun in one transaction, so
    rows read after this one reflect this cycle or a later one."""
    from schedweb.scheduling.models import CycleRun

    row = (CycleRun.objects.filter(skipped=False, errors="").order_by("-id")
           .values_list("id", "started").first())
    if row is None:
        return None
    return {"id": row[0], "started": serializers.DateTimeField().to_representation(row[1])}

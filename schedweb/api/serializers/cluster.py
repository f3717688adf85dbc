"""Serializers of the staff-managed objects: nodes, priority classes, namespace quotas, config."""

from __future__ import annotations

from rest_framework import serializers

from schedweb.api.serializers.base import ResourceField, StrictSerializer, StringMapField
from schedweb.api.units import to_api

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def node_allocated(node_ids: list[int]) -> dict[int, dict[str, float]]:
    """Per node id, the summed requests (stored units) of the tasks holding it (NODE_BOUND
    statuses: Releasing ones still hold their room): one query for all the nodes of a page."""
    from schedweb.core.models import NODE_BOUND_TASK_STATUSES, Task

    out: dict[int, dict[str, float]] = {pk: {} for pk in node_ids}
    rows = Task.objects.filter(node_id__in=node_ids, status__in=NODE_BOUND_TASK_STATUSES).values_list(
        "node_id", "request").order_by()
    for node_id, request in rows:
        held = out[node_id]
        for name, amount in (request or {}).items():
            if isinstance(amount, int | float) and not isinstance(amount, bool):
                held[name] = held.get(name, 0) + amount
    return out


class TaintSerializer(StrictSerializer):
    """A node taint {key, value, effect}."""

    key = serializers.CharField()
    value = serializers.CharField(required=False, default="", allow_blank=True)
    effect = serializers.ChoiceField(TAINT_EFFECTS)
    timeAdded = serializers.CharField(required=False, help_text=(  # noqa: N815 - Kubernetes' name
        "When the taint was added (RFC 3339), as Kubernetes writes it on NoExecute taints."))


class NodeSerializer(serializers.Serializer):
    """A node as the API shows it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    allocatable = ResourceField()
    labels = serializers.JSONField()
    taints = serializers.JSONField()
    unschedulable = serializers.BooleanField()
    usage_cpu = serializers.FloatField(allow_null=True)
    usage_memory = serializers.FloatField(allow_null=True)
    usage_updated = serializers.DateTimeField(allow_null=True)
    allocated = serializers.SerializerMethodField(
        help_text="What the tasks holding the node request, summed (read-only; output units).")
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


    def get_allocated(self, obj) -> dict[str, float]:
        """From the context's `allocated` map (the view's one query per page), else read now."""
        held = (self.context.get("allocated") or {}).get(obj.pk)
        if held is None:
            held = node_allocated([obj.pk])[obj.pk]
        return to_api(held) or {}


class NodeWriteSerializer(StrictSerializer):
    """Node input (allocatable may include `pods`)."""

    name = serializers.CharField(max_length=253, trim_whitespace=False)  # refused by the service
    allocatable = ResourceField()
    labels = StringMapField(required=False, default=dict)
    taints = TaintSerializer(many=True, required=False, default=list)
    unschedulable = serializers.BooleanField(required=False, default=False)


class HeartbeatSerializer(StrictSerializer):
    """A node agent's usage report, in percent of allocatable."""

    cpu = serializers.FloatField(min_value=0, max_value=100)
    memory = serializers.FloatField(min_value=0, max_value=100)


class PriorityClassSerializer(StrictSerializer):
    """A priority class (input and output)."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(max_length=253, trim_whitespace=False)  # refused by the service
    value = serializers.IntegerField()
    preemption_policy = serializers.ChoiceField(("PreemptLowerPriority", "Never"), required=False,
                                                default="PreemptLowerPriority")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    global_default = serializers.BooleanField(
        required=False, default=False,
        help_text="Kubernetes' globalDefault: jobs submitted without a class get it (one class at most).")


class NamespaceQuotaSerializer(StrictSerializer):
    """A namespace's hard quota (input and output); `used` is computed from its tasks."""

    id = serializers.IntegerField(read_only=True)
    namespace = serializers.CharField(max_length=63)
    hard = ResourceField()
    used = serializers.SerializerMethodField()

    def get_used(self, obj) -> dict[str, float]:
        """Requests of the namespace's unfinished tasks (the view computes all of a page at once)."""
        used = self.context.get("namespace_used")
        if used is None or obj.namespace not in used:
            from schedweb.core.selectors import namespace_used

            used = namespace_used([obj.namespace])
        return to_api(used[obj.namespace])


class SchedulerConfigSerializer(serializers.Serializer):
    """A stored scheduler configuration version."""

    version = serializers.IntegerField()
    yaml = serializers.CharField()
    active = serializers.BooleanField()
    comment = serializers.CharField()
    created = serializers.DateTimeField()
    created_by = serializers.SerializerMethodField()

    def get_created_by(self, obj) -> str | None:
        """Username of the author, if any."""
        return obj.created_by.get_username() if obj.created_by_id else None


class SchedulerConfigWriteSerializer(StrictSerializer):
    """A replacement configuration (Volcano's volcano-scheduler.conf YAML)."""

    yaml = serializers.CharField()
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=500)


class SchedulerConfigDryRunSerializer(StrictSerializer):
    """A configuration to try (empty or absent: the active one)."""

    yaml = serializers.CharField(required=False, allow_blank=True, default="")


class TokenSerializer(serializers.Serializer):
    """An API token without its secret."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    created = serializers.DateTimeField()
    last_used = serializers.DateTimeField(allow_null=True)
    expires = serializers.DateTimeField(allow_null=True)
    revoked = serializers.DateTimeField(allow_null=True)


class TokenCreateSerializer(StrictSerializer):
    """Token input: a name and an optional expiry."""

    name = serializers.CharField(max_length=100)
    expires = serializers.DateTimeField(required=False, allow_null=True, default=None)


class TokenSecretSerializer(TokenSerializer):
    """A token with its raw key: returned once, on creation or rotation."""

    key = serializers.CharField()


class ManifestImportSerializer(StrictSerializer):
    """JSON form of a manifest import (a raw YAML body is accepted too)."""

    yaml = serializers.CharField()

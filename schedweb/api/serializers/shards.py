"""NodeShard serializers: the read shape and the strict write input (create / patch)."""

from __future__ import annotations

from rest_framework import serializers

from schedweb.api.serializers.base import StrictSerializer

SHARD_MODES = ("hard", "soft")


class NodeShardSerializer(serializers.Serializer):
    """A NodeShard as the API shows it: spec (nodes_desired), status (in use, to add, to remove,
    last update), its scheduler's name and mode, and the controller's policy."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    scheduler_name = serializers.CharField(read_only=True)
    mode = serializers.ChoiceField(SHARD_MODES, read_only=True)
    nodes_desired = serializers.ListField(child=serializers.CharField(), read_only=True)
    nodes_in_use = serializers.ListField(child=serializers.CharField(), read_only=True)
    nodes_to_add = serializers.ListField(child=serializers.CharField(), read_only=True)
    nodes_to_remove = serializers.ListField(child=serializers.CharField(), read_only=True)
    min_nodes = serializers.IntegerField(read_only=True)
    max_nodes = serializers.IntegerField(read_only=True, allow_null=True)
    cpu_utilization_min = serializers.FloatField(read_only=True)
    cpu_utilization_max = serializers.FloatField(read_only=True)
    last_update_time = serializers.DateTimeField(read_only=True, allow_null=True)
    version = serializers.IntegerField(read_only=True, help_text=(
        "Optimistic version: the ETag; send it back as If-Match to change only this version."))
    created = serializers.DateTimeField(read_only=True)
    updated = serializers.DateTimeField(read_only=True)


class NodeShardWriteSerializer(StrictSerializer):
    """NodeShard input. The services check names, the one-shard-per-node rule, the band (0 <=
    min <= max <= 1) and the node range; the status lists are the scheduler's and not input."""

    name = serializers.CharField(max_length=253, trim_whitespace=False)
    scheduler_name = serializers.CharField(max_length=253, trim_whitespace=False, help_text=(
        "The scheduler instance owning this shard (Volcano's schedulerName); unique."))
    mode = serializers.ChoiceField(SHARD_MODES, required=False, default="hard", help_text=(
        "hard: the scheduler uses only its shard's nodes; soft: it prefers them."))
    nodes_desired = serializers.ListField(child=serializers.CharField(max_length=253, trim_whitespace=False),
                                          required=False, default=list, max_length=100_000, help_text=(
        "Node names this shard desires (the sharding controller rewrites them each step)."))
    min_nodes = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**31 - 1)
    max_nodes = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=0,
                                         max_value=2**31 - 1)
    cpu_utilization_min = serializers.FloatField(required=False, default=0.0, min_value=0, max_value=1)
    cpu_utilization_max = serializers.FloatField(required=False, default=1.0, min_value=0, max_value=1)

"""Queue serializers: read shape, write input (create/replace/patch), ACL lists and the tree."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from schedweb.api.serializers.base import JSONObjectField, ResourceField, StrictSerializer
from schedweb.api.units import to_api
from schedweb.core.access import ADMIN_GROUPS, ADMIN_USERS, SUBMITTER_GROUPS, SUBMITTER_USERS

QUEUE_STATES = ("Open", "Closed", "Closing")


class AclSerializer(StrictSerializer):
    """Users (usernames) and groups (names) of one ACL role."""

    users = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    groups = serializers.ListField(child=serializers.CharField(), required=False, default=list)

    def validate_users(self, names: list[str]) -> list:
        """Usernames to users; unknown names are an error listing them."""
        users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=names)}
        missing = sorted(set(names) - set(users))
        if missing:
            raise serializers.ValidationError(f"Unknown user(s): {', '.join(missing)}.")
        return [users[n] for n in dict.fromkeys(names)]

    def validate_groups(self, names: list[str]) -> list:
        """Group names to groups; unknown names are an error listing them."""
        groups = {g.name: g for g in Group.objects.filter(name__in=names)}
        missing = sorted(set(names) - set(groups))
        if missing:
            raise serializers.ValidationError(f"Unknown group(s): {', '.join(missing)}.")
        return [groups[n] for n in dict.fromkeys(names)]


class QueueSerializer(serializers.Serializer):
    """A queue as the API shows it (parent by name; null = top level under the implicit root)."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    parent = serializers.SerializerMethodField()
    weight = serializers.IntegerField(read_only=True)
    priority = serializers.IntegerField(read_only=True)
    state = serializers.CharField(read_only=True)
    reclaimable = serializers.BooleanField(read_only=True)
    capability = ResourceField(read_only=True, allow_null=True)
    deserved = ResourceField(read_only=True, allow_null=True)
    guarantee = ResourceField(read_only=True, allow_null=True)
    annotations = serializers.JSONField(read_only=True)
    admins = serializers.SerializerMethodField()
    submitters = serializers.SerializerMethodField()
    created = serializers.DateTimeField(read_only=True)
    updated = serializers.DateTimeField(read_only=True)

    def get_parent(self, obj) -> str | None:
        """The parent's name (None = top level)."""
        parents = self.context.get("queue_names")
        if parents is not None:
            return parents.get(obj.parent_id)
        return obj.parent.name if obj.parent_id else None

    @staticmethod
    def _acl(obj, users_field: str, groups_field: str) -> dict[str, list[str]]:
        return {"users": sorted(u.get_username() for u in getattr(obj, users_field).all()),
                "groups": sorted(g.name for g in getattr(obj, groups_field).all())}

    def get_admins(self, obj) -> dict[str, list[str]]:
        """Users and groups that administer this queue directly."""
        return self._acl(obj, ADMIN_USERS, ADMIN_GROUPS)

    def get_submitters(self, obj) -> dict[str, list[str]]:
        """Users and groups that submit to this queue directly."""
        return self._acl(obj, SUBMITTER_USERS, SUBMITTER_GROUPS)


class QueueWriteSerializer(StrictSerializer):
    """Queue input. On create `name` is required; PATCH sends only the keys to change."""

    name = serializers.CharField(max_length=253, trim_whitespace=False)  # refused by the service, not trimmed
    parent = serializers.CharField(allow_null=True, required=False, default=None, trim_whitespace=False)
    weight = serializers.IntegerField(required=False, default=1)
    priority = serializers.IntegerField(required=False, default=0)
    reclaimable = serializers.BooleanField(required=False, default=True)
    capability = ResourceField(required=False, allow_null=True, default=None)
    deserved = ResourceField(required=False, allow_null=True, default=None)
    guarantee = ResourceField(required=False, allow_null=True, default=None)
    annotations = JSONObjectField(required=False, default=dict)
    state = serializers.ChoiceField(QUEUE_STATES, required=False)
    admins = AclSerializer(required=False)
    submitters = AclSerializer(required=False)

    def validate_weight(self, value: int) -> int:
        """Volcano queue weights start at 1."""
        if value < 1:
            raise serializers.ValidationError("Weight must be at least 1.")
        return value


class QueueStateSerializer(StrictSerializer):
    """Body of the open / close actions (empty; the action names the state)."""


def _amounts(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=serializers.FloatField(), allow_null=True, help_text=help_text)


class QueueTreeFiguresSerializer(serializers.Serializer):
    """Schema of a tree node's `figures` (output units: cpu in cores, memory in bytes)."""

    deserved = _amounts("The queue's deserved share in the newest cycle (null before any cycle).")
    allocated = _amounts("Requests of its subtree's running tasks.")
    request = _amounts("Requests of its subtree's unfinished tasks.")
    guarantee = _amounts("As configured (null: none).")
    capability = _amounts("As configured (null: unbounded).")
    real_capability = _amounts("The capability the scheduler applied (null before any cycle).")
    share = serializers.FloatField(allow_null=True)
    pending_jobs = serializers.IntegerField()


@extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/QueueTreeNode"}})
class _SubtreeField(serializers.ListField):
    """The children of a tree node: tree nodes again (a recursive schema)."""


class QueueTreeNodeSerializer(serializers.Serializer):
    """Schema of one queue of GET queues/tree/ (queue_node builds it)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    weight = serializers.IntegerField()
    priority = serializers.IntegerField()
    state = serializers.ChoiceField(choices=QUEUE_STATES)
    reclaimable = serializers.BooleanField()
    figures = QueueTreeFiguresSerializer()
    children = _SubtreeField()


class QueueTreeSerializer(serializers.Serializer):
    """Schema of GET queues/tree/: the implicit root and the top-level queues' subtrees."""

    name = serializers.CharField()
    children = QueueTreeNodeSerializer(many=True)


def queue_node(queue, children: dict, figures: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One queue of the tree response, with its figures and its children (recursively)."""
    fig = figures.get(queue.id) or {}
    return {
        "id": queue.id,
        "name": queue.name,
        "weight": queue.weight,
        "priority": queue.priority,
        "state": queue.state,
        "reclaimable": queue.reclaimable,
        "figures": {
            "deserved": to_api(fig.get("deserved")),
            "allocated": to_api(fig.get("allocated") or {}),
            "request": to_api(fig.get("request") or {}),
            "guarantee": to_api(queue.guarantee),
            "capability": to_api(queue.capability),
            "real_capability": to_api(fig.get("real_capability")),
            "share": fig.get("share"),
            "pending_jobs": fig.get("pending_jobs", 0),
        },
        "children": [queue_node(c, children, figures) for c in children.get(queue.id, ())],
    }


class QueueHistoryQuerySerializer(serializers.Serializer):
    """Query of GET /api/v1/queues/{name}/history/ (schedweb.scheduling.history)."""

    since = serializers.DateTimeField(required=False, help_text=(
        "ISO 8601 start of the window (default: one hour before `until`)."))
    until = serializers.DateTimeField(required=False, help_text="ISO 8601 end of the window (default: now).")
    points = serializers.IntegerField(required=False, min_value=2, max_value=2000, help_text=(
        "At most this many points (default 500): a window with more samples is cut into this many "
        "equal buckets and each keeps its newest sample."))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`since` must not be after `until`."""
        since, until = attrs.get("since"), attrs.get("until")
        if since is not None and until is not None and since > until:
            raise serializers.ValidationError({"since": ["Must not be after until."]})
        return attrs


class QueueHistoryPointSerializer(serializers.Serializer):
    """One kept sample: the cycle's figures of the queue in output units (cpu cores, memory bytes,
    scalars in units), its share and whether it was overused."""

    time = serializers.DateTimeField()
    cycle = serializers.IntegerField()
    share = serializers.FloatField()
    overused = serializers.BooleanField()
    deserved = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    allocated = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    request = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    inqueue = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    elastic = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    capability = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    real_capability = serializers.DictField(child=serializers.FloatField(), allow_null=True)
    guarantee = serializers.DictField(child=serializers.FloatField(), allow_null=True)


class QueueHistorySerializer(serializers.Serializer):
    """A queue's share history over a window; `bucket_seconds` is null unless downsampled."""

    queue = serializers.CharField()
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    samples = serializers.IntegerField(help_text="Samples of the queue in the window.")
    downsampled = serializers.BooleanField()
    bucket_seconds = serializers.FloatField(allow_null=True)
    points = QueueHistoryPointSerializer(many=True)


def history_body(history: Any) -> dict[str, Any]:
    """The response of the history endpoint for a schedweb.scheduling.history.History."""
    from schedweb.scheduling.history import FIGURES

    return {
        "queue": history.queue, "since": history.since, "until": history.until,
        "samples": history.samples, "downsampled": history.downsampled,
        "bucket_seconds": history.bucket_seconds,
        "points": [{"time": p["time"], "cycle": p["cycle"], "share": p["share"], "overused": p["overused"],
                    **{f: to_api(p[f]) for f in FIGURES}} for p in history.points],
    }

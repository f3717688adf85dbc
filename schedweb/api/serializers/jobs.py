"""Job (PodGroup) and task serializers: submit input, list/detail output, status updates."""

from __future__ import annotations

from rest_framework import serializers

from schedweb.api.serializers.base import (
    JSONObjectField,
    ResourceField,
    StrictSerializer,
    StringMapField,
)

TASK_STATUSES = ("Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing",
                 "Succeeded", "Failed")
AGENT_STATUSES = ("Running", "Succeeded", "Failed")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


class TaskInputSerializer(StrictSerializer):
    """One task (pod) of a submitted job."""

    name = serializers.CharField(max_length=253)
    role = serializers.CharField(required=False, default="", allow_blank=True, max_length=63)
    request = ResourceField(required=False, default=dict)
    priority = serializers.IntegerField(required=False, allow_null=True, default=None)
    preemption_policy = serializers.ChoiceField(PREEMPTION_POLICIES, required=False,
                                                default="PreemptLowerPriority")
    preemptable = serializers.BooleanField(required=False, default=True)
    labels = StringMapField(required=False, default=dict)
    node_selector = StringMapField(required=False, default=dict)
    tolerations = serializers.ListField(child=JSONObjectField(), required=False, default=list)
    affinity = JSONObjectField(required=False, allow_null=True, default=None)
    duration = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)


class JobSubmitSerializer(StrictSerializer):
    """A PodGroup with all its tasks, submitted in one request."""

    namespace = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, error_messages={
        "invalid": "Must be a DNS label: lower-case letters, digits and '-'."})
    name = serializers.CharField(max_length=253)
    queue = serializers.CharField()
    min_member = serializers.IntegerField(required=False, default=1, min_value=0)
    min_task_member = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False,
                                            default=dict)
    min_resources = ResourceField(required=False, allow_null=True, default=None)
    priority_class = serializers.CharField(required=False, allow_null=True, default=None)
    preemptable = serializers.BooleanField(required=False, default=True)
    sla_waiting_time = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)
    tasks = TaskInputSerializer(many=True, allow_empty=False)

    def validate_tasks(self, tasks: list[dict]) -> list[dict]:
        """Task names are unique within the job."""
        seen: set[str] = set()
        for task in tasks:
            if task["name"] in seen:
                raise serializers.ValidationError(f"Duplicate task name {task['name']!r}.")
            seen.add(task["name"])
        return tasks

    def validate(self, attrs: dict) -> dict:
        """min_member and min_task_member fit the tasks given."""
        if attrs["min_member"] > len(attrs["tasks"]):
            raise serializers.ValidationError({"min_member": [
                f"min_member {attrs['min_member']} is above the task count {len(attrs['tasks'])}."]})
        roles: dict[str, int] = {}
        for task in attrs["tasks"]:
            roles[task["role"]] = roles.get(task["role"], 0) + 1
        for role, n in attrs["min_task_member"].items():
            if n > roles.get(role, 0):
                raise serializers.ValidationError({"min_task_member": [
                    f"Role {role!r} needs {n} task(s) but the job has {roles.get(role, 0)}."]})
        return attrs


class TaskSerializer(serializers.Serializer):
    """A task as the API shows it."""

    id = serializers.IntegerField(read_only=True)
    uid = serializers.SerializerMethodField()
    name = serializers.CharField(read_only=True)
    job = serializers.IntegerField(source="job_id", read_only=True)
    role = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)
    node = serializers.SerializerMethodField()
    request = ResourceField(read_only=True)
    priority = serializers.IntegerField(read_only=True, allow_null=True)
    preemption_policy = serializers.CharField(read_only=True)
    preemptable = serializers.BooleanField(read_only=True)
    labels = serializers.JSONField(read_only=True)
    node_selector = serializers.JSONField(read_only=True)
    tolerations = serializers.JSONField(read_only=True)
    affinity = serializers.JSONField(read_only=True)
    duration = serializers.FloatField(read_only=True, allow_null=True)
    started = serializers.DateTimeField(read_only=True, allow_null=True)
    finished = serializers.DateTimeField(read_only=True, allow_null=True)
    created = serializers.DateTimeField(read_only=True)
    updated = serializers.DateTimeField(read_only=True)

    def get_uid(self, obj) -> str:
        """The scheduler key "namespace/name"."""
        return f"{obj.job.namespace}/{obj.name}"  # querysets select (or prefetch) the job

    def get_node(self, obj) -> str | None:
        """Name of the node the task is on, if any."""
        return obj.node.name if obj.node_id else None


class TaskStatusSerializer(StrictSerializer):
    """A node agent's report: the pod started, succeeded or failed."""

    status = serializers.ChoiceField(AGENT_STATUSES)
    message = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)


class JobSerializer(serializers.Serializer):
    """A job in lists: no tasks, but task counts annotated by the queryset."""

    id = serializers.IntegerField(read_only=True)
    uid = serializers.SerializerMethodField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    queue = serializers.CharField(source="queue.name")
    phase = serializers.CharField()
    min_member = serializers.IntegerField()
    min_task_member = serializers.JSONField()
    min_resources = ResourceField(allow_null=True)
    priority_class = serializers.SerializerMethodField()
    preemptable = serializers.BooleanField()
    sla_waiting_time = serializers.FloatField(allow_null=True)
    submitted_by = serializers.SerializerMethodField()
    task_count = serializers.IntegerField(read_only=True, default=None)
    running_count = serializers.IntegerField(read_only=True, default=None)
    pending_count = serializers.IntegerField(read_only=True, default=None)
    reason = serializers.SerializerMethodField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()
    finished = serializers.DateTimeField(allow_null=True)

    def get_uid(self, obj) -> str:
        """The scheduler key "namespace/name"."""
        return f"{obj.namespace}/{obj.name}"

    def get_priority_class(self, obj) -> str | None:
        """Name of the job's priority class, if any."""
        return obj.priority_class.name if obj.priority_class_id else None

    def get_submitted_by(self, obj) -> str | None:
        """Username of the submitter, if any."""
        return obj.submitted_by.get_username() if obj.submitted_by_id else None

    def get_reason(self, obj) -> dict | None:
        """The current pending reason, or None when the job is not waiting."""
        if not obj.reason_code:
            return None
        return {"code": obj.reason_code, "message": obj.reason_message, "since": obj.reason_since}


class JobDetailSerializer(JobSerializer):
    """A job with its tasks, the current reason's details and (when recorded) the reason history."""

    tasks = serializers.SerializerMethodField()
    reason_details = serializers.JSONField()
    reason_history = serializers.SerializerMethodField()

    def get_tasks(self, obj) -> list[dict]:
        """The job's tasks (prefetched by the view)."""
        return TaskSerializer(obj.tasks.all(), many=True, context=self.context).data

    def get_reason_history(self, obj) -> list[dict]:
        """The job's reason timeline (schedweb.scheduling's JobReasonHistory), newest first."""
        from schedweb.scheduling.models import JobReasonHistory

        rows = JobReasonHistory.objects.filter(job=obj).order_by("-first_seen", "-id")[:50]
        return [{"code": r.code, "message": r.message, "first_seen": r.first_seen,
                 "last_seen": r.last_seen, "current": r.current} for r in rows]

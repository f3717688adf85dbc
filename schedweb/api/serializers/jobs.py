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
# Job detail shows this many tasks (by id); the rest page through GET /api/v1/tasks/?job=<id>.
JOB_DETAIL_TASKS = 100


def _default_queue() -> str:
    from schedweb.core.default_queue import default_queue_name

    return default_queue_name()


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
    topology_spread_constraints = serializers.ListField(child=JSONObjectField(), required=False,
                                                        default=list)
    # Shape only (a number); the bounds (finite, at most 366 days) are the service's.
    duration = serializers.FloatField(required=False, allow_null=True, default=None)


class JobSubmitSerializer(StrictSerializer):
    """A PodGroup with all its tasks, submitted in one request."""

    namespace = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, error_messages={
        "invalid": "Must be a DNS label: lower-case letters, digits and '-'."})
    name = serializers.CharField(max_length=253)
    # Absent: the default queue (settings.DEFAULT_QUEUE), as Volcano puts a job naming none in "default".
    queue = serializers.CharField(required=False, default=_default_queue,
                                  help_text="A leaf queue; absent = the default queue (DEFAULT_QUEUE).")
    min_member = serializers.IntegerField(required=False, default=1, min_value=0)
    min_task_member = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False,
                                            default=dict)
    min_resources = ResourceField(required=False, allow_null=True, default=None)
    priority_class = serializers.CharField(required=False, allow_null=True, default=None)
    preemptable = serializers.BooleanField(required=False, default=True)
    sla_waiting_time = serializers.FloatField(required=False, allow_null=True, default=None)
    tasks = TaskInputSerializer(many=True, allow_empty=False)

    def to_internal_value(self, data):
        """Refuse a job above settings.MAX_TASKS_PER_JOB before validating any of its tasks."""
        from schedweb.core.job_services import max_tasks_per_job

        tasks, limit = data.get("tasks") if isinstance(data, dict) else None, max_tasks_per_job()
        if isinstance(tasks, list) and len(tasks) > limit:
            raise serializers.ValidationError({"tasks": [
                f"A job may have at most {limit} tasks (MAX_TASKS_PER_JOB), got {len(tasks)}."]})
        return super().to_internal_value(data)

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
    topology_spread_constraints = serializers.JSONField(read_only=True)
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
    """A job with the first page of its tasks (JOB_DETAIL_TASKS, by id; `tasks_total` counts all
    and `tasks_next` pages on through the task list), the current reason's details and (when
    recorded) the reason history."""

    tasks = serializers.SerializerMethodField()
    tasks_total = serializers.SerializerMethodField()
    tasks_url = serializers.SerializerMethodField()
    tasks_next = serializers.SerializerMethodField()
    reason_details = serializers.JSONField()
    reason_history = serializers.SerializerMethodField()

    def _page(self, obj) -> tuple[list, int]:
        cached = getattr(obj, "_task_page", None)
        if cached is None:
            page = list(obj.tasks.select_related("node").order_by("id")[:JOB_DETAIL_TASKS + 1])
            for task in page:
                task.job = obj  # TaskSerializer reads the job's namespace
            total = len(page) if len(page) <= JOB_DETAIL_TASKS else obj.tasks.count()
            cached = obj._task_page = (page[:JOB_DETAIL_TASKS], total)
        return cached

    def _url(self, query: str) -> str:
        path = f"/api/v1/tasks/?{query}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_tasks(self, obj) -> list[dict]:
        """The job's first JOB_DETAIL_TASKS tasks, by id."""
        return TaskSerializer(self._page(obj)[0], many=True, context=self.context).data

    def get_tasks_total(self, obj) -> int:
        """How many tasks the job has."""
        return self._page(obj)[1]

    def get_tasks_url(self, obj) -> str:
        """The paginated list of all the job's tasks."""
        return self._url(f"job={obj.pk}")

    def get_tasks_next(self, obj) -> str | None:
        """The task list page after the tasks shown here, or None when all are shown."""
        page, total = self._page(obj)
        return self._url(f"job={obj.pk}&limit={JOB_DETAIL_TASKS}&offset={JOB_DETAIL_TASKS}") \
            if total > len(page) else None

    def get_reason_history(self, obj) -> list[dict]:
        """The job's reason timeline (schedweb.scheduling's JobReasonHistory), newest first."""
        from schedweb.scheduling.models import JobReasonHistory

        rows = JobReasonHistory.objects.filter(job=obj).order_by("-first_seen", "-id")[:50]
        return [{"code": r.code, "message": r.message, "first_seen": r.first_seen,
                 "last_seen": r.last_seen, "current": r.current} for r in rows]

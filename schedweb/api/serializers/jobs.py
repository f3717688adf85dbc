"""Job (PodGroup) and task serializers: submit input, list/detail output, status updates."""

from __future__ import annotations

import threading
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from schedweb.api.serializers.base import (
    JSONObjectField,
    ResourceField,
    StrictSerializer,
    StringMapField,
)
from schedweb.api.serializers.cycle_ref import CycleRefSerializer, newest_cycle

AGENT_STATUSES = ("Running", "Succeeded", "Failed")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
# Job detail shows this many tasks (by id); the rest page through GET /api/v1/tasks/?job=<id>.
JOB_DETAIL_TASKS = 100


def _default_queue() -> str:
    from schedweb.core.default_queue import default_queue_name

    return default_queue_name()


class TaskListSerializer(serializers.ListSerializer):
    """A job's task entries: entries equal but for their name (a job's workers, as portals list
    them) are validated once; each name still is."""

    def to_internal_value(self, data):
        """DRF's list validation, with a fresh memo per list."""
        self._memo: dict[str, dict] = {}
        return super().to_internal_value(data)

    def run_child_validation(self, data):
        """The entry's validated data, from the memo when an equal entry came before."""
        key = None
        if isinstance(data, dict) and "name" in data:
            key = repr({k: v for k, v in data.items() if k != "name"})
            hit = self._memo.get(key)
            if hit is not None:
                try:
                    name = self.child.fields["name"].run_validation(data["name"])
                except serializers.ValidationError as exc:
                    raise serializers.ValidationError({"name": exc.detail}) from None
                return {**hit, "name": name}
        validated = super().run_child_validation(data)
        if key is not None:
            self._memo[key] = validated
        return validated


class TaskInputSerializer(StrictSerializer):
    """One task (pod) of a submitted job."""

    class Meta:
        list_serializer_class = TaskListSerializer

    # Names are not trimmed: "w-0\n" is refused as Kubernetes refuses it (the services check names).
    name = serializers.CharField(max_length=253, trim_whitespace=False)
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
    replicas = serializers.IntegerField(
        required=False, min_value=0, max_value=2**31 - 1, help_text=(
            "This entry stands for N tasks named as Volcano names pods, `<job>-<name>-<index>` (index "
            "from 0); their role defaults to `name`. Absent: one task named `name`."))

    def to_internal_value(self, data):
        """Drop an absent `replicas` (the service then takes the entry as one task)."""
        out = super().to_internal_value(data)
        if out.get("replicas") is None:
            out.pop("replicas", None)
        return out


class JobSubmitSerializer(StrictSerializer):
    """A PodGroup with all its tasks, submitted in one request."""

    namespace = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, error_messages={
        "invalid": "Must be a DNS label: lower-case letters, digits and '-'."}, trim_whitespace=False)
    name = serializers.CharField(max_length=253, trim_whitespace=False)
    # Absent: the default queue (settings.DEFAULT_QUEUE), as Volcano puts a job naming none in "default".
    queue = serializers.CharField(required=False, default=_default_queue, trim_whitespace=False,
                                  help_text="A leaf queue; absent = the default queue (DEFAULT_QUEUE).")
    min_member = serializers.IntegerField(required=False, default=1, min_value=0)
    min_task_member = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False,
                                            default=dict)
    min_resources = ResourceField(required=False, allow_null=True, default=None)
    priority_class = serializers.CharField(required=False, allow_null=True, default=None,
                                           trim_whitespace=False)
    preemptable = serializers.BooleanField(required=False, default=True)
    sla_waiting_time = serializers.FloatField(required=False, allow_null=True, default=None)
    scheduler_name = serializers.CharField(required=False, default="volcano", max_length=253,
                                           trim_whitespace=False, help_text=(
        "The scheduler instance that places the job (Volcano's schedulerName; a NodeShard's "
        "scheduler_name); absent = volcano."))
    tasks = TaskInputSerializer(many=True, allow_empty=False)

    def to_internal_value(self, data):
        """Refuse a job above settings.MAX_TASKS_PER_JOB (replicas counted) before validating any
        of its tasks. Names, counts and roles are the service's checks (every problem at once)."""
        from schedweb.core.job_submission import max_tasks_per_job

        tasks, limit = data.get("tasks") if isinstance(data, dict) else None, max_tasks_per_job()
        if isinstance(tasks, list):
            total = 0
            for task in tasks:
                n = task.get("replicas") if isinstance(task, dict) else None
                total += n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
            if total > limit:
                raise serializers.ValidationError({"tasks": [
                    f"A job may have at most {limit} tasks (MAX_TASKS_PER_JOB), got {total}."]})
        return super().to_internal_value(data)


_local = threading.local()


def validate_submission(data: Any) -> dict:
    """JobSubmitSerializer's validated data of one body (raises its ValidationError, as is_valid
    would). One serializer per thread, reused: DRF deep-copies a serializer's fields for every new
    instance, which cost a submission more than validating it (a batch: once per job)."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
    serializer = getattr(_local, "submit", None)
    if serializer is None:
        serializer = _local.submit = JobSubmitSerializer()
    return dict(serializer.run_validation(data))


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
        """The scheduler key "namespace/job/task" (task names are unique per job)."""
        return f"{obj.job.namespace}/{obj.job.name}/{obj.name}"  # querysets select (or prefetch) the job

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
    scheduler_name = serializers.CharField(help_text="The scheduler instance that places the job.")
    submitted_by = serializers.SerializerMethodField()
    task_count = serializers.SerializerMethodField()
    running_count = serializers.SerializerMethodField()
    pending_count = serializers.SerializerMethodField()
    reason = serializers.SerializerMethodField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()
    finished = serializers.DateTimeField(allow_null=True)
    cycle = serializers.SerializerMethodField(help_text=(
        "The cycle whose decisions this body reflects ({id, started}: the newest cycle that wrote "
        "its decisions when the body was built; null before the first cycle, and in a submission's "
        "201: no cycle has seen the job yet). Every item of one list page names the same cycle."))

    def get_uid(self, obj) -> str:
        """The scheduler key "namespace/name"."""
        return f"{obj.namespace}/{obj.name}"

    @extend_schema_field(CycleRefSerializer(allow_null=True))
    def get_cycle(self, obj) -> dict | None:
        """See the field's help text: read once per body (the root serializer's context keeps it)."""
        context = self.context
        if "cycle" not in context:
            context["cycle"] = newest_cycle()
        return context["cycle"]

    def get_priority_class(self, obj) -> str | None:
        """Name of the job's priority class, if any."""
        return obj.priority_class.name if obj.priority_class_id else None

    def get_submitted_by(self, obj) -> str | None:
        """Username of the submitter, if any."""
        return obj.submitted_by.get_username() if obj.submitted_by_id else None

    def get_task_count(self, obj) -> int:
        """How many tasks the job has."""
        return task_counts(obj)[0]

    def get_running_count(self, obj) -> int:
        """How many of its tasks are Running."""
        return task_counts(obj)[1]

    def get_pending_count(self, obj) -> int:
        """How many of its tasks are Pending."""
        return task_counts(obj)[2]

    def get_reason(self, obj) -> dict | None:
        """The current pending reason, or None when the job is not waiting."""
        if not obj.reason_code:
            return None
        return {"code": obj.reason_code, "message": obj.reason_message, "since": obj.reason_since}


class ReasonDetailsField(serializers.JSONField):
    """The current reason's details, its queue chain's figures those of the newest cycle (the row
    names the levels only: schedweb.scheduling.reason_chain)."""

    def to_representation(self, value: Any) -> Any:
        from schedweb.scheduling.reason_chain import fill

        return super().to_representation(fill(value))


class JobDetailSerializer(JobSerializer):
    """A job with the first page of its tasks (JOB_DETAIL_TASKS, by id; `tasks_total` counts all
    and `tasks_next` pages on through the task list), the current reason's details and (when
    recorded) the reason history."""

    tasks = serializers.SerializerMethodField()
    tasks_total = serializers.SerializerMethodField()
    tasks_url = serializers.SerializerMethodField()
    tasks_next = serializers.SerializerMethodField()
    reason_details = ReasonDetailsField()
    reason_history = serializers.SerializerMethodField()
    forecast = serializers.SerializerMethodField(help_text=(
        "The newest start-time forecast for the job (schedweb.scheduling.forecast_read): "
        "estimated_start (ISO 8601, or null), estimate_basis (declared / history / unknown / "
        "beyond_horizon / never), sentence, computed_at, until."))
    estimated_start = serializers.SerializerMethodField()
    estimate_basis = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField(help_text=(
        "The PodGroup status as Volcano's gang plugin sets it: `conditions`, each {type "
        "(Unschedulable / Scheduled), status, reason, message, lastTransitionTime}, one per type, "
        "changed only when the scheduler's words change."))

    def to_representation(self, instance):
        """The task page first: the counts come from it when it holds every task (no query)."""
        self._page(instance)
        return super().to_representation(instance)

    def _forecast(self, obj) -> dict:
        cached = getattr(obj, "_forecast", None)
        if cached is None:
            from schedweb.scheduling.forecast_read import forecast_fields

            cached = obj._forecast = forecast_fields(obj)
        return cached

    def get_forecast(self, obj) -> dict:
        """See the field's help text."""
        return self._forecast(obj)

    def get_estimated_start(self, obj) -> str | None:
        """forecast.estimated_start, at the top level for clients such as schedctl."""
        return self._forecast(obj)["estimated_start"]

    def get_estimate_basis(self, obj) -> str | None:
        """forecast.estimate_basis, at the top level for clients such as schedctl."""
        return self._forecast(obj)["estimate_basis"]

    def _page(self, obj) -> tuple[list, int]:
        cached = getattr(obj, "_task_page", None)
        new = getattr(obj, "_new_tasks", None)  # a job just submitted: its rows, nothing to read
        if cached is None and new is not None:
            from schedweb.core.job_store import task_objects

            cached = obj._task_page = (task_objects(obj, new[:JOB_DETAIL_TASKS]), len(new))
        if cached is None:
            page = list(obj.tasks.select_related("node").prefetch_related("spec").order_by("id")
                        [:JOB_DETAIL_TASKS + 1])
            for task in page:
                task.job = obj  # TaskSerializer reads the job's namespace
            total = len(page) if len(page) <= JOB_DETAIL_TASKS else obj.tasks.count()
            cached = obj._task_page = (page[:JOB_DETAIL_TASKS], total)
        return cached

    def _url(self, query: str) -> str:
        path = f"/api/v1/tasks/?{query}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(TaskSerializer(many=True))
    def get_tasks(self, obj) -> list[dict]:
        """The job's first JOB_DETAIL_TASKS tasks, by id."""
        tasks = getattr(_local, "tasks", None)
        if tasks is None:  # one per thread: a new one deep-copies its fields (it needs no context)
            tasks = _local.tasks = TaskSerializer(many=True)
        return tasks.to_representation(self._page(obj)[0])

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

    @extend_schema_field({"type": "object", "properties": {"conditions": {"type": "array", "items": {
        "type": "object", "properties": {k: {"type": "string"} for k in (
            "type", "status", "reason", "message", "lastTransitionTime")}}}}})
    def get_status(self, obj) -> dict:
        """The job's PodGroup conditions (schedweb.scheduling's JobCondition), in the order they
        first appeared."""
        from schedweb.scheduling.models import JobCondition

        if getattr(obj, "_reason_history", None) is not None:
            return {"conditions": []}  # a job just submitted has none
        return {"conditions": [c.to_json() for c in JobCondition.objects.filter(job=obj).order_by("id")]}

    def get_reason_history(self, obj) -> list[dict]:
        """The job's reason timeline (schedweb.scheduling's JobReasonHistory), newest first."""
        from schedweb.scheduling.models import JobReasonHistory

        if getattr(obj, "_reason_history", None) is not None:
            return obj._reason_history  # a job just submitted has none
        rows = JobReasonHistory.objects.filter(job=obj).order_by("-first_seen", "-id")[:50]
        return [{"code": r.code, "message": r.message, "first_seen": r.first_seen,
                 "last_seen": r.last_seen, "current": r.current} for r in rows]


class SubmitWarningSerializer(serializers.Serializer):
    """A reason the job can never run as submitted (issue 16): accepted all the same, as Kubernetes
    accepts an unschedulable pod; the scheduler's first cycle gives it reason NeverFits."""

    code = serializers.CharField(help_text="NeverFits")
    kind = serializers.CharField(help_text="TaskLargerThanAnyNode, NoNodeMatches, GangExceedsQueueLimit or "
                                           "GangExceedsCluster")
    message = serializers.CharField()
    dimension = serializers.CharField(allow_null=True,
                                      help_text="The limiting resource (None for NoNodeMatches)")
    need = serializers.FloatField(allow_null=True, help_text="What the job needs of it (cores, bytes, units)")
    limit = serializers.FloatField(allow_null=True, help_text="The most it could ever get")


class JobCreatedSerializer(JobDetailSerializer):
    """The 201 of a submission: the job, and `warnings` when it already cannot fit."""

    warnings = serializers.SerializerMethodField()

    @extend_schema_field(CycleRefSerializer(allow_null=True))
    def get_cycle(self, obj) -> dict | None:
        """None: the job was just written, no cycle has seen it (and no query on this path)."""
        return None

    def _forecast(self, obj) -> dict:
        # No query on the submission path: a job just written has no forecast yet.
        return {"estimated_start": None, "estimate_basis": None,
                "sentence": "no estimate yet: the job was just submitted", "computed_at": None, "until": None}

    @extend_schema_field(SubmitWarningSerializer(many=True))
    def get_warnings(self, obj) -> list[dict]:
        """NeverFits warnings computed at submit time (schedweb.scheduling.never_fits_check)."""
        return list(getattr(obj, "submit_warnings", None) or [])


def created_representation(job, context: dict) -> dict:
    """JobCreatedSerializer(job, context=context).data, from one serializer per thread (a new one
    deep-copies its fields: a third of a submission's response)."""
    serializer = getattr(_local, "created", None)
    if serializer is None:
        serializer = _local.created = JobCreatedSerializer()
    serializer._context = context  # where DRF keeps it: read by `self.context` at every level
    try:
        return serializer.to_representation(job)
    finally:
        serializer._context = {}


def task_counts(job) -> tuple[int, int, int]:
    """(tasks, Running, Pending) of a job: set by the list's grouped query or the submission,
    counted from the detail's task page when it holds every task, else one grouped query."""
    if getattr(job, "task_count", None) is None:
        page = getattr(job, "_task_page", None)
        if page is not None and len(page[0]) == page[1]:
            statuses = [t.status for t in page[0]]
            job.task_count, job.running_count, job.pending_count = (
                len(statuses), statuses.count("Running"), statuses.count("Pending"))
        else:
            with_task_counts([job])
    return job.task_count, job.running_count, job.pending_count


def with_task_counts(jobs: list) -> list:
    """Set task_count / running_count / pending_count on these jobs (one grouped query)."""
    from django.db.models import Count, Q

    from schedweb.core.models import Task

    counts = {
        row["job_id"]: row for row in
        Task.objects.filter(job_id__in=[j.id for j in jobs]).values("job_id").annotate(
            total=Count("id"), running=Count("id", filter=Q(status="Running")),
            pending=Count("id", filter=Q(status="Pending"))).order_by()
    }
    for job in jobs:
        row = counts.get(job.id) or {"total": 0, "running": 0, "pending": 0}
        job.task_count, job.running_count, job.pending_count = row["total"], row["running"], row["pending"]
    return jobs

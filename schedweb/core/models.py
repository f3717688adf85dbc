"""Cluster objects as stored. Resource maps are JSON in stored units (Resource.to_canonical():
milli-cpu, bytes, milli-scalars; node allocatable adds a plain `pods` count). Write them only
through schedweb.core.services, which validates."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models

from scheduler_core import model as scheduler_model
from schedweb.core.task_spec_values import SPEC_DEFAULTS, SPEC_FIELDS


class QueueState(models.TextChoices):
    """Volcano queue states."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"


class JobPhase(models.TextChoices):
    """PodGroup phases, plus Cancelled (cancelled by a user; terminal) and Aborted (Volcano's
    phase of a job suspended by `vcctl job suspend`, shown as "Suspended"; resumable)."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"
    CANCELLED = "Cancelled"
    ABORTED = "Aborted", "Suspended"


# Task (pod) statuses: derived from the scheduler's enum so the two can never drift apart.
TaskStatus = models.TextChoices("TaskStatus", [(s.name, s.value) for s in scheduler_model.TaskStatus])


class PreemptionPolicy(models.TextChoices):
    """Kubernetes pod preemption policies."""

    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"


TERMINAL_TASK_STATUSES = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
# Statuses in which a task holds resources on its node (cannot lose its node).
NODE_BOUND_TASK_STATUSES = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING,
                            TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING)
TERMINAL_JOB_PHASES = (JobPhase.COMPLETED, JobPhase.CANCELLED)
# Phases the scheduler never schedules: finished, or suspended (such a job is loaded only while a
# task of it still holds a node, as a finished one is).
UNSCHEDULED_JOB_PHASES = (*TERMINAL_JOB_PHASES, JobPhase.ABORTED)
# The reason code of a suspended job (set by job_suspend; the cycle writes no reason of such a job).
SUSPENDED_REASON = "Suspended"
ROOT_QUEUE_NAME = "root"


class Queue(models.Model):
    """A queue of the hierarchy; parent null = top level under the implicit "root" queue."""

    name = models.CharField(max_length=253, unique=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT,
                               related_name="children")
    weight = models.PositiveIntegerField(default=1)
    priority = models.IntegerField(default=0)
    state = models.CharField(max_length=8, choices=QueueState.choices, default=QueueState.OPEN)
    reclaimable = models.BooleanField(default=True)
    capability = models.JSONField(null=True, blank=True)
    deserved = models.JSONField(null=True, blank=True)
    guarantee = models.JSONField(null=True, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    # Optimistic version: every write through the services adds 1 (the API's ETag, the edit
    # form's hidden field): a write based on an older version is refused, never silently lost.
    version = models.PositiveIntegerField(default=1)
    # ACLs (inherited down the tree by the API): admins manage, submitters submit jobs.
    admin_users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="admin_of_queues")
    admin_groups = models.ManyToManyField(Group, blank=True, related_name="admin_of_queues")
    submitter_users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True,
                                             related_name="submitter_of_queues")
    submitter_groups = models.ManyToManyField(Group, blank=True, related_name="submitter_of_queues")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(weight__gte=1), name="queue_weight_min_1"),
            models.CheckConstraint(condition=~models.Q(name=ROOT_QUEUE_NAME), name="queue_name_not_root"),
        ]

    def __str__(self) -> str:
        return self.name


class Node(models.Model):
    """A worker node: allocatable resources (with `pods`), labels, taints, cordon flag, usage."""

    name = models.CharField(max_length=253, unique=True)
    allocatable = models.JSONField(default=dict)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    unschedulable = models.BooleanField(default=False)
    usage_cpu = models.FloatField(null=True, blank=True)
    usage_memory = models.FloatField(null=True, blank=True)
    usage_updated = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ShardMode(models.TextChoices):
    """How a shard's scheduler treats the nodes outside its shard (Volcano's sharding modes)."""

    HARD = "hard", "hard"
    SOFT = "soft", "soft"


class NodeShard(models.Model):
    """A Volcano NodeShard (`shard.volcano.sh/v1alpha1`): the nodes one scheduler instance owns.

    Spec: `nodes_desired` (what the sharding controller assigns). Status: `nodes_in_use` (what the
    shard's scheduler placed against in its last cycle), `nodes_to_add` (desired, not yet in use:
    another shard still holds them) and `nodes_to_remove` (in use, no longer desired). Node names,
    not keys, as upstream: a node that left stays named until the controller drops it. The
    scheduler's own settings sit beside them: `scheduler_name` (the jobs it takes: Volcano's
    `schedulerName`), `mode` (hard or soft) and the controller's policy for this shard (node count
    range, CPU utilisation band).
    """

    name = models.CharField(max_length=253, unique=True)
    scheduler_name = models.CharField(max_length=253, unique=True)
    mode = models.CharField(max_length=4, choices=ShardMode.choices, default=ShardMode.HARD)
    nodes_desired = models.JSONField(default=list, blank=True)
    nodes_in_use = models.JSONField(default=list, blank=True)
    nodes_to_add = models.JSONField(default=list, blank=True)
    nodes_to_remove = models.JSONField(default=list, blank=True)
    min_nodes = models.PositiveIntegerField(default=0)
    max_nodes = models.PositiveIntegerField(null=True, blank=True)
    cpu_utilization_min = models.FloatField(default=0.0)
    cpu_utilization_max = models.FloatField(default=1.0)
    last_update_time = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PriorityClass(models.Model):
    """A Kubernetes PriorityClass: a named priority value and preemption policy."""

    name = models.CharField(max_length=253, unique=True)
    value = models.IntegerField()
    preemption_policy = models.CharField(max_length=24, choices=PreemptionPolicy.choices,
                                         default=PreemptionPolicy.PREEMPT_LOWER_PRIORITY)
    description = models.TextField(blank=True, default="")
    # Kubernetes' globalDefault: jobs submitted without a class get this one (at most one class).
    global_default = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "priority classes"
        constraints = [models.UniqueConstraint(fields=["global_default"],
                                               condition=models.Q(global_default=True),
                                               name="priority_class_one_global_default")]

    def __str__(self) -> str:
        return f"{self.name} ({self.value})"


DEFAULT_SCHEDULER_NAME = "volcano"


class Job(models.Model):
    """A PodGroup: gang of tasks submitted to a leaf queue, with its current pending reason."""

    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="jobs")
    min_member = models.PositiveIntegerField(default=1)
    min_task_member = models.JSONField(default=dict, blank=True)
    min_resources = models.JSONField(null=True, blank=True)
    priority_class = models.ForeignKey(PriorityClass, null=True, blank=True, on_delete=models.PROTECT,
                                       related_name="jobs")
    phase = models.CharField(max_length=10, choices=JobPhase.choices, default=JobPhase.PENDING)
    preemptable = models.BooleanField(default=True)
    sla_waiting_time = models.FloatField(null=True, blank=True)
    # Indexed with the phase (Meta.indexes), which serves lookups by submitter alone too.
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, db_index=False,
                                     on_delete=models.SET_NULL, related_name="submitted_jobs")
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    # sha256 of the canonical body the key came with: the same key with another body is a 409.
    idempotency_hash = models.CharField(max_length=64, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    finished = models.DateTimeField(null=True, blank=True)
    reason_code = models.CharField(max_length=32, blank=True, default="")
    reason_message = models.TextField(blank=True, default="")
    reason_details = models.JSONField(default=dict, blank=True)
    reason_since = models.DateTimeField(null=True, blank=True)
    # Manifest fields schedweb stores but does not act on (a vcjob's policies, plugins, volumes,
    # pod templates, ...), exported back unchanged: schedweb.api.manifests_vcjob.
    passthrough = models.JSONField(default=dict, blank=True)
    # Volcano's `schedulerName`: the scheduler instance that places this job (docs/semantics.md,
    # "Scheduler sharding"); a name no shard's scheduler answers to goes to the default scheduler.
    scheduler_name = models.CharField(max_length=253, default=DEFAULT_SCHEDULER_NAME,
                                      db_default=DEFAULT_SCHEDULER_NAME)

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="job_namespace_name_unique"),
            models.UniqueConstraint(fields=["submitted_by", "idempotency_key"],
                                    condition=models.Q(idempotency_key__isnull=False),
                                    name="job_idempotency_key_unique"),
        ]
        # No `updated` index: the API's data version comes from the scheduler's change log
        # (migration 0005), and every index is one more entry per row a writer changes.
        # (submitted_by, phase): a submitter's waiting jobs, counted on every submission
        # (schedweb.core.waiting_counts).
        indexes = [models.Index(fields=["phase"], name="job_phase_idx"),
                   models.Index(fields=["submitted_by", "phase"], name="job_submitter_phase_idx")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        """The scheduler key "namespace/name"."""
        return f"{self.namespace}/{self.name}"


class TaskSpec(models.Model):
    """A pod spec shared by the tasks that have it (every replica of a template): stored once per
    distinct content, found by `digest` (task_spec_values.spec_digest). Never changed in place:
    a task whose spec changes points at another row."""

    digest = models.CharField(max_length=64, unique=True)
    node_selector = models.JSONField(default=dict, blank=True)
    tolerations = models.JSONField(default=list, blank=True)
    affinity = models.JSONField(null=True, blank=True)
    topology_spread_constraints = models.JSONField(default=list, blank=True)
    labels = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return self.digest[:12]

    def values(self) -> dict[str, object]:
        """The spec fields as a dict (task_spec_values.SPEC_FIELDS)."""
        return {name: getattr(self, name) for name in SPEC_FIELDS}


class TaskQuerySet(models.QuerySet):
    """Task queries; bulk_create first stores the specs of tasks given spec fields (or none)."""

    def bulk_create(self, objs, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201 - Django's
        objs = list(objs)
        pending = [t for t in objs if t._spec_values is not None or t.spec_id is None]
        if pending:
            from schedweb.core.task_specs import attach_specs  # task_specs imports this module

            attach_specs(pending)
        return super().bulk_create(objs, *args, **kwargs)


def _spec_property(name: str) -> property:
    def get(self: Task) -> object:
        if self._spec_values is not None:
            return self._spec_values[name]
        if self.spec_id is None:
            return SPEC_DEFAULTS[name]
        return getattr(self.spec, name)

    def set_(self: Task, value: object) -> None:
        values = self._spec_values
        if values is None:
            values = (self.spec.values() if self.spec_id is not None else dict(SPEC_DEFAULTS))
        self._spec_values = {**values, name: SPEC_DEFAULTS[name] if value is None else value}

    return property(get, set_, doc=f"The task's `{name}` (stored in its TaskSpec).")


class Task(models.Model):
    """A pod of a job. Its name is unique within the job's namespace (key "namespace/name").

    Its pod spec (node_selector, tolerations, affinity, topology_spread_constraints, labels) lives
    in a shared TaskSpec; the attributes of those names read it, and setting them (or passing them
    to the constructor) makes save() / bulk_create() point the task at the matching TaskSpec.
    Readers of many tasks prefetch_related("spec"): one read per distinct spec, shared objects.
    """

    # No index of its own: the unique (job, name) index below serves every lookup by job, and each
    # index is one more entry to write for every task the cycle changes.
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tasks", db_index=False)
    name = models.CharField(max_length=253)
    role = models.CharField(max_length=63, blank=True, default="")
    request = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=TaskStatus.choices, default=TaskStatus.PENDING)
    # PROTECT: a node with running tasks must not vanish under them (node_delete refuses).
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks")
    priority = models.IntegerField(null=True, blank=True)
    # PROTECT: a spec goes only when no task has it (task_specs.prune_task_specs). Not indexed:
    # every task row the cycle changes would write one more entry; only pruning (a job deleted)
    # looks tasks up by spec, one scan per pruning.
    spec = models.ForeignKey(TaskSpec, on_delete=models.PROTECT, related_name="tasks", db_index=False)
    preemption_policy = models.CharField(max_length=24, choices=PreemptionPolicy.choices,
                                         default=PreemptionPolicy.PREEMPT_LOWER_PRIORITY)
    preemptable = models.BooleanField(default=True)
    duration = models.FloatField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    # Spec values set on this object and not saved yet (None: the stored spec is current).
    _spec_values: dict[str, object] | None = None
    node_selector = _spec_property("node_selector")
    tolerations = _spec_property("tolerations")
    affinity = _spec_property("affinity")
    topology_spread_constraints = _spec_property("topology_spread_constraints")
    labels = _spec_property("labels")

    class Meta:
        ordering = ["job_id", "name"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="task_job_name_unique")]
        indexes = [models.Index(fields=["status"], name="task_status_idx")]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - Django's signature
        """Save, first pointing the task at the TaskSpec of spec values set on it."""
        if self._spec_values is not None or self.spec_id is None:  # no spec given: the default one
            from schedweb.core.task_specs import attach_specs  # task_specs imports this module

            attach_specs([self])
            fields = kwargs.get("update_fields")
            if fields is not None:
                kwargs["update_fields"] = {*(f for f in fields if f not in SPEC_FIELDS), "spec"}
        super().save(*args, **kwargs)


class NamespaceQuota(models.Model):
    """A namespace's hard resource quota (resourcequota plugin); `used` is computed from tasks."""

    namespace = models.CharField(max_length=63, unique=True)
    hard = models.JSONField(default=dict)

    class Meta:
        ordering = ["namespace"]

    def __str__(self) -> str:
        return self.namespace


class SchedulerConfig(models.Model):
    """One version of the scheduler configuration YAML; exactly one version is active."""

    version = models.PositiveIntegerField(unique=True, editable=False)
    yaml = models.TextField()
    active = models.BooleanField(default=False)
    comment = models.CharField(max_length=500, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-version"]
        constraints = [models.UniqueConstraint(fields=["active"], condition=models.Q(active=True),
                                               name="scheduler_config_one_active")]

    def __str__(self) -> str:
        return f"v{self.version}{' (active)' if self.active else ''}"

"""What the scheduling cycles recorded: one CycleRun per cycle, per-queue samples, reason history,
the node scores of the placements."""

from __future__ import annotations

from django.db import models


class CycleRun(models.Model):
    """One scheduling cycle: timings (load / schedule / write), decision counts, errors, skip flag."""

    started = models.DateTimeField(db_index=True)
    skipped = models.BooleanField(default=False)  # another leader held the lock
    config_version = models.PositiveIntegerField(null=True, blank=True)
    load_seconds = models.FloatField(default=0.0)
    schedule_seconds = models.FloatField(default=0.0)
    write_seconds = models.FloatField(default=0.0)
    duration_seconds = models.FloatField(default=0.0)
    binds = models.PositiveIntegerField(default=0)
    pipelined = models.PositiveIntegerField(default=0)
    evictions = models.PositiveIntegerField(default=0)
    pending_jobs = models.PositiveIntegerField(default=0)
    # Decisions dropped because the row changed (cancel, delete, node removal) during the cycle.
    conflicts = models.PositiveIntegerField(default=0)
    errors = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)
    # The rescheduling plugin was due in this cycle: its `lastRun` is the latest such cycle.
    rescheduling_ran = models.BooleanField(default=False)
    # Jobs set aside in this cycle because their data or evaluation failed (InvalidJob).
    job_errors = models.PositiveIntegerField(default=0)
    # The simulated agent's step after this cycle failed (its error), "" when it ran or is off.
    agent_error = models.TextField(blank=True, default="")
    # The session's own timings (SessionResult.timing, seconds): `action_<name>_s` per action,
    # `session_s`, ...; /metrics builds Volcano's latency histograms from them.
    timing = models.JSONField(default=dict, blank=True)
    # Pending tasks in the cycle's snapshot, and whether the cycle recorded its placements' node
    # scores (TaskPlacementScores): off when SCHEDULER_RECORD_SCORES is 0 or in a burst (more
    # than SCHEDULER_RECORD_SCORES_MAX_PENDING pending tasks).
    pending_tasks = models.PositiveIntegerField(default=0)
    scores_recorded = models.BooleanField(default=False)
    # The scheduler instance that ran the cycle: its NodeShard's name, "" for the unsharded one
    # (schedweb.scheduling.shard_runtime); each instance checks only its own runs.
    shard = models.CharField(max_length=253, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-started", "-id"]

    def __str__(self) -> str:
        return f"cycle {self.pk} at {self.started:%Y-%m-%d %H:%M:%S}{' (skipped)' if self.skipped else ''}"


class QueueSample(models.Model):
    """One queue's figures in one cycle (stored units); `explanation` kept on the latest only."""

    cycle = models.ForeignKey(CycleRun, on_delete=models.CASCADE, related_name="queue_samples")
    queue = models.CharField(max_length=253)  # a name: "root" has no row, deleted queues keep history
    created = models.DateTimeField()
    deserved = models.JSONField(null=True, blank=True)
    allocated = models.JSONField(null=True, blank=True)
    request = models.JSONField(null=True, blank=True)
    inqueue = models.JSONField(null=True, blank=True)
    elastic = models.JSONField(null=True, blank=True)
    capability = models.JSONField(null=True, blank=True)
    real_capability = models.JSONField(null=True, blank=True)
    guarantee = models.JSONField(null=True, blank=True)
    share = models.FloatField(default=0.0)
    weight = models.PositiveIntegerField(default=1)
    overused = models.BooleanField(default=False)
    explanation = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["queue", "-created"]
        indexes = [models.Index(fields=["queue", "created"], name="queuesample_queue_created")]

    def __str__(self) -> str:
        return f"{self.queue} @ cycle {self.cycle_id}"


class JobReasonHistory(models.Model):
    """A span during which a job waited for one reason code (first seen / last seen)."""

    job = models.ForeignKey("core.Job", on_delete=models.CASCADE, related_name="reason_history")
    code = models.CharField(max_length=32)
    message = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    current = models.BooleanField(default=True)  # the job's reason now; at most one per job

    class Meta:
        ordering = ["job_id", "first_seen", "id"]
        indexes = [models.Index(fields=["job", "current"], name="reasonhistory_job_current")]
        verbose_name_plural = "job reason history"

    def __str__(self) -> str:
        return f"{self.job_id}: {self.code}"


class ForecastRun(models.Model):
    """One forecast (schedweb.scheduling.forecast_task): when it ran, how far it simulated, how long
    it took. Only the newest few are kept; the estimates themselves are JobForecast rows."""

    computed_at = models.DateTimeField(db_index=True)  # the forecast's `now`: the state it started from
    until = models.DateTimeField(null=True, blank=True)  # the last simulated instant
    cycles = models.PositiveIntegerField(default=0)
    stop = models.CharField(max_length=16, blank=True, default="")  # Forecast.stop
    jobs = models.PositiveIntegerField(default=0)  # waiting jobs answered
    load_seconds = models.FloatField(default=0.0)
    forecast_seconds = models.FloatField(default=0.0)
    cpu_seconds = models.FloatField(default=0.0)
    store_seconds = models.FloatField(default=0.0)
    errors = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-computed_at", "-id"]

    def __str__(self) -> str:
        return f"forecast {self.pk} at {self.computed_at:%Y-%m-%d %H:%M:%S}"


class JobForecast(models.Model):
    """The newest forecast's estimate for one waiting job; the table is replaced by each run.

    A table of its own rather than fields on Job: writing Job rows would fire the change log
    (every forecast a re-read of every waiting job by the cycle) and move the API's data version.
    """

    job = models.OneToOneField("core.Job", on_delete=models.CASCADE, primary_key=True,
                               related_name="forecast")
    estimated_start = models.DateTimeField(null=True, blank=True)  # None: see estimate_basis
    estimate_basis = models.CharField(max_length=16)  # scheduler_core.forecast.Basis
    computed_at = models.DateTimeField()  # ForecastRun.computed_at of the run that wrote it
    until = models.DateTimeField()  # the last simulated instant (beyond_horizon: not before it)

    class Meta:
        ordering = ["job_id"]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.estimate_basis} {self.estimated_start}"


class TaskPlacementScores(models.Model):
    """Why a cycle put a task on its node: the node scores of the placement (issue 17 rule 9).

    Written by the cycle for the tasks it bound or pipelined (at most SCHEDULER_RECORD_SCORES_PER_JOB
    a job per cycle), from `SessionResult.node_scores` (scheduler_core.explain.node_scores): `top` holds
    the best nodes of the try, best first, and `chosen_scores` the chosen node's entry, each
    `{"node", "total", "plugins": {plugin: part}, "pipelined"}`. Pruned with their cycle.
    """

    cycle = models.ForeignKey(CycleRun, on_delete=models.CASCADE, related_name="placement_scores")
    job = models.ForeignKey("core.Job", on_delete=models.CASCADE, related_name="placement_scores")
    task_name = models.CharField(max_length=253)
    node = models.CharField(max_length=253)  # a name: the node may be deleted since
    pipelined = models.BooleanField(default=False)
    action = models.CharField(max_length=16, blank=True, default="")  # the action that placed it
    # None: the task got its node from an earlier try of the session (no scores of that choice).
    chosen_scores = models.JSONField(null=True, blank=True)
    top = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["job_id", "task_name", "-cycle_id"]
        verbose_name_plural = "task placement scores"

    def __str__(self) -> str:
        return f"{self.job_id}/{self.task_name} -> {self.node} @ cycle {self.cycle_id}"


class MetricTotal(models.Model):
    """One counter of /metrics (schedweb.scheduling.metric_totals): a running total, never pruned.

    `name` is the metric family, `labels` its label values as canonical JSON, `sample` "" for a
    counter, else a histogram's part: "sum" or a bucket's bound (`le`, counted per bucket, not
    cumulatively). Incremented by the writer's own transaction (the cycle's for its figures), so
    a total moves exactly when what it counts commits.
    """

    name = models.CharField(max_length=128)
    labels = models.CharField(max_length=255, default="{}")
    sample = models.CharField(max_length=32, default="")
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "labels", "sample"], name="metrictotal_key")]

    def __str__(self) -> str:
        return f"{self.name}{self.labels}{self.sample} = {self.value}"


class JobCondition(models.Model):
    """A job's PodGroup condition (Volcano's `status.conditions`), one row per job and type.

    Written by the cycle from `SessionResult.conditions` (the gang plugin's, at session close)
    only when status, reason or message change: `last_transition_time` is when it last did. In a
    table of its own, so that a condition never rewrites the job row (nor its change-log entry).
    The foreign key cascades in PostgreSQL itself too (migration 0009).
    """

    job = models.ForeignKey("core.Job", on_delete=models.CASCADE, related_name="conditions",
                            db_constraint=False, db_index=False)
    type = models.CharField(max_length=32)
    status = models.CharField(max_length=8, default="True")
    reason = models.CharField(max_length=64, blank=True, default="")
    message = models.TextField(blank=True, default="")
    last_transition_time = models.DateTimeField()

    class Meta:
        ordering = ["job_id", "type"]
        constraints = [models.UniqueConstraint(fields=["job", "type"],
                                               name="scheduling_jobcondition_job_type")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.type} ({self.reason})"

    def to_json(self) -> dict[str, str]:
        """Kubernetes' condition shape (`scheduler_core.result.PodGroupCondition.to_json`)."""
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message,
                "lastTransitionTime": self.last_transition_time.strftime("%Y-%m-%dT%H:%M:%SZ")}


class MetricsBody(models.Model):
    """The /metrics exposition rendered after the newest cycle (schedweb.scheduling.metrics_body):
    one row, replaced only by a render of a newer cycle (or a fresher one of the same cycle)."""

    cycle_id = models.BigIntegerField()  # the newest CycleRun when rendered (0: none yet)
    rendered = models.DateTimeField()
    last_success = models.DateTimeField(null=True)  # started of the newest successful cycle
    body = models.TextField()

    def __str__(self) -> str:
        return f"metrics of cycle {self.cycle_id} ({self.rendered:%Y-%m-%d %H:%M:%S})"

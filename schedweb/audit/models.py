"""One row per change of a cluster setting (queue, node, priority class, quota, config, job cancel)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditAction(models.TextChoices):
    """What happened to the object."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    SET_STATE = "set_state"
    ACTIVATE = "activate"
    CANCEL = "cancel"


class AuditObjectType(models.TextChoices):
    """Kinds of audited objects."""

    QUEUE = "queue"
    NODE = "node"
    PRIORITY_CLASS = "priority_class"
    NAMESPACE_QUOTA = "namespace_quota"
    SCHEDULER_CONFIG = "scheduler_config"
    JOB = "job"
    NODE_SHARD = "node_shard"


class AuditEntry(models.Model):
    """An immutable record of one change with the object's state before and after it.

    `queue_id` / `parent_queue_id` are plain integers (no foreign key) so entries outlive the
    queue they describe; queue admins see the entries of the queues they administer."""

    timestamp = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    # Kept as text so the entry still names the actor after the user is deleted; "system" = no user.
    actor_name = models.CharField(max_length=150)
    token_name = models.CharField(max_length=100, blank=True, default="")
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    object_type = models.CharField(max_length=32, choices=AuditObjectType.choices)
    object_key = models.CharField(max_length=320)
    queue_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    parent_queue_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    diff = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True, default="")
    ip = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-timestamp", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["object_type", "object_key"], name="audit_object_idx")]

    def __str__(self) -> str:
        return f"{self.timestamp:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_type} " \
               f"{self.object_key}"

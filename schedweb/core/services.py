"""All writes to the cluster objects. Admin, API (single, batch and manifest submissions through
schedweb.api.commands) and UI call these and nothing else; the stores below them (job_store's
one-statement insert, queue_locks) are their implementation.

Keyword-only arguments; each service is atomic and raises
django.core.exceptions.ValidationError({field: [message]}) and saves nothing on bad input.
This module is the one import path; the services live by concept in queue_services,
node_services, cluster_services (priority classes, namespace quotas, scheduler config),
job_services and job_apply, shard_services (NodeShards), and share service_base (UNSET, the
update helper, the audit entry).
"""

from __future__ import annotations

from schedweb.core.cluster_services import (
    namespace_quota_set,
    priority_class_create,
    priority_class_delete,
    priority_class_update,
    scheduler_config_activate,
)
from schedweb.core.job_apply import job_set_passthrough, job_update
from schedweb.core.job_services import job_cancel, job_submit, jobs_insert, task_set_status
from schedweb.core.node_services import node_create, node_delete, node_heartbeat, node_update
from schedweb.core.queue_services import queue_create, queue_delete, queue_set_state, queue_update
from schedweb.core.service_base import UNSET
from schedweb.core.shard_services import (
    node_shard_create,
    node_shard_delete,
    node_shard_set_desired,
    node_shard_set_in_use,
    node_shard_update,
)

__all__ = [
    "UNSET", "job_cancel", "job_set_passthrough", "job_submit", "job_update", "jobs_insert",
    "namespace_quota_set",
    "node_create", "node_delete",
    "node_heartbeat", "node_shard_create", "node_shard_delete", "node_shard_set_desired",
    "node_shard_set_in_use", "node_shard_update", "node_update", "priority_class_create",
    "priority_class_delete",
    "priority_class_update", "queue_create", "queue_delete", "queue_set_state", "queue_update",
    "scheduler_config_activate", "task_set_status",
]

"""API input (validated serializer data, names instead of objects) to schedweb.core.services calls.

Views and the manifest import share these, so a Queue from YAML and a Queue from JSON pass the
same checks: permissions, name resolution with field errors, then exactly one service call.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.exceptions import PermissionDenied

from schedweb.api.exceptions import IdempotencyKeyReused
from schedweb.api.permissions import QueueAccess
from schedweb.core import services
from schedweb.core.models import ROOT_QUEUE_NAME, Job, PriorityClass, Queue
from schedweb.core.validation import check_text


def resolve_queue(name: str | None, field: str = "queue") -> Queue | None:
    """The queue named `name` (None and "root", the implicit root, are None), or a field error."""
    if name is None or name == ROOT_QUEUE_NAME:
        return None
    check_text(name, field, max_length=253)  # before the lookup: PostgreSQL refuses NUL
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise ValidationError({field: [f"Unknown queue {name!r}."]})
    return queue


def resolve_priority_class(name: str | None) -> PriorityClass | None:
    """The priority class named `name`, or a field error naming it."""
    if not name:
        return None
    check_text(name, "priority_class", max_length=253)
    pc = PriorityClass.objects.filter(name=name).first()
    if pc is None:
        raise ValidationError({"priority_class": [f"Unknown priority class {name!r}."]})
    return pc


def _acl_kwargs(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for role in ("admins", "submitters"):
        if role in data:
            acl = data[role] or {}
            out[f"{role[:-1]}_users"] = acl.get("users", [])
            out[f"{role[:-1]}_groups"] = acl.get("groups", [])
    return out


def queue_create(*, access: QueueAccess, data: dict[str, Any]) -> Queue:
    """Create a queue: only admins of the parent (staff for a top-level queue) may."""
    parent = resolve_queue(data.get("parent"), "parent")
    if not access.can_admin(parent.id if parent else None):
        raise PermissionDenied("Only admins of the parent queue (staff for top-level queues) may create "
                               "queues here.")
    return services.queue_create(
        name=data["name"], parent=parent, weight=data["weight"], priority=data["priority"],
        state=data.get("state") or "Open", reclaimable=data["reclaimable"], capability=data["capability"],
        deserved=data["deserved"], guarantee=data["guarantee"], annotations=data["annotations"],
        actor=access.user, **_acl_kwargs(data),
    )


def queue_update(*, access: QueueAccess, queue: Queue, data: dict[str, Any]) -> Queue:
    """Change a queue (only the given keys); moving it also needs admin rights on the new parent."""
    if not access.can_admin(queue.id):
        raise PermissionDenied(f"Only admins of queue {queue.name} or its ancestors may change it.")
    changes = {k: v for k, v in data.items() if k not in ("admins", "submitters", "state")}
    if "parent" in changes:
        parent = resolve_queue(changes["parent"], "parent")
        if parent != (queue.parent if queue.parent_id else None) and not access.can_admin(
                parent.id if parent else None):
            raise PermissionDenied("Moving a queue needs admin rights on the new parent.")
        changes["parent"] = parent
    changes.update(_acl_kwargs(data))
    if changes:
        queue = services.queue_update(queue=queue, actor=access.user, **changes)
    if data.get("state") and data["state"] != queue.state:
        queue = services.queue_set_state(queue=queue, state=data["state"], actor=access.user)
    return queue


def body_hash(body: Any) -> str:
    """sha256 of the canonical JSON of a request body (sorted keys, no blanks): the fingerprint an
    Idempotency-Key is bound to, so key order or spacing never makes two bodies differ."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def job_queue(name: Any) -> Queue:
    """The leaf queue a job is submitted to: "root" (the implicit top) is a field error."""
    if name == ROOT_QUEUE_NAME:
        raise ValidationError({"queue": [f'"{ROOT_QUEUE_NAME}" is the implicit root queue; jobs go into '
                                         "leaf queues only."]})
    queue = resolve_queue(name)
    if queue is None:
        raise ValidationError({"queue": ["This field is required."]})
    return queue


def job_submit(*, access: QueueAccess, data: dict[str, Any], idempotency_key: str | None = None,
               request_hash: str = "") -> tuple[Job, bool]:
    """Submit a job; returns (job, created). A known Idempotency-Key with the same body
    (`request_hash`, see body_hash) returns the first job instead; with another body it is a 409."""
    user = access.user
    if idempotency_key:
        check_text(idempotency_key, "Idempotency-Key", max_length=255)
        first = _idempotent_job(user, idempotency_key, data, request_hash)
        if first is not None:
            return first, False
    queue = job_queue(data["queue"])
    if not access.can_submit(queue.id):
        raise PermissionDenied(f"You may not submit jobs to queue {queue.name}.")
    kwargs = {k: v for k, v in data.items() if k not in ("queue", "priority_class")}
    try:
        # The savepoint keeps an outer transaction usable after a unique-constraint race.
        with transaction.atomic():
            job = services.job_submit(
                queue=queue, priority_class=resolve_priority_class(data.get("priority_class")),
                submitted_by=user, idempotency_key=idempotency_key or None,
                idempotency_hash=request_hash if idempotency_key else "", **kwargs,
            )
    except (IntegrityError, ValidationError) as exc:
        # A retry that raced past the lookup above fails on the (namespace, name) check or on
        # the unique constraints: it returns the winner's job. Anything else is re-raised.
        first = _idempotent_job(user, idempotency_key, data, request_hash) if idempotency_key else None
        if first is not None:
            return first, False
        if isinstance(exc, IntegrityError):  # a concurrent submit of the same name won
            message = f"Job {data['namespace']}/{data['name']} already exists."
            raise ValidationError({"name": [message]}) from None
        raise
    return job, True


def _idempotent_job(user, key: str, data: dict[str, Any], request_hash: str = "") -> Job | None:
    """The job this user first submitted with `key`; IdempotencyKeyReused (409) when it came with
    another body (jobs stored before bodies were hashed compare namespace and name)."""
    job = Job.objects.filter(submitted_by=user, idempotency_key=key).first()
    if job is None:
        return None
    same = (job.idempotency_hash == request_hash if job.idempotency_hash and request_hash
            else (job.namespace, job.name) == (data["namespace"], data["name"]))
    if not same:
        raise IdempotencyKeyReused(f"Idempotency-Key already used for job {job.namespace}/{job.name} with a "
                                   "different request body; use a new key for a different request.")
    return job

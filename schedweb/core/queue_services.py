"""Write services of the queue tree; re-exported by schedweb.core.services (import them there)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.core import snapshots
from schedweb.core.access import QueueAccess
from schedweb.core.default_queue import default_queue_name
from schedweb.core.models import ROOT_QUEUE_NAME, TERMINAL_JOB_PHASES, Queue, QueueState
from schedweb.core.queue_limits import check_queue_limits, load_tree
from schedweb.core.queue_locks import lock_chains
from schedweb.core.queue_share import check_sibling_share
from schedweb.core.service_base import UNSET, FieldChecks, as_bool, audit, check_unique_name, field_check
from schedweb.core.validation import check_choice, check_int, check_object, check_text, fail, parse_resources

RESOURCE_FIELDS = ("capability", "deserved", "guarantee")
SHARE_FIELDS = ("weight", "priority", "reclaimable", "deserved", "guarantee")


class StaleVersion(ValidationError):
    """The queue changed since the version the caller based its write on (the API's If-Match:
    412; the edit form's hidden `version`: a form error). Nothing is saved."""


def _check_version(queue: Queue, expected: int | None) -> None:
    if expected is not None and queue.version != expected:
        raise StaleVersion({"version": [
            f"Queue {queue.name!r} was changed by someone else since this version was read (version "
            f"{expected}, now {queue.version}); reload it and make the change again."]})


def _audit_queue(action: str, queue: Queue, before: dict | None, after: dict | None, actor: Any) -> None:
    # The queue ids let admins of the queue (or of its parent, after a delete) read the entry.
    audit(action, AuditObjectType.QUEUE, queue.name, before, after, actor, queue_id=queue.pk,
          parent_queue_id=queue.parent_id)


def _check_queue_name(name: Any, queue: Queue | None) -> str:
    """A free queue name, not "root"; the default queue keeps its name."""
    if queue is not None and queue.name == default_queue_name() and name != queue.name:
        raise fail("name", f"Queue {queue.name!r} is the default queue (DEFAULT_QUEUE); it cannot be "
                           "renamed.")
    if name == ROOT_QUEUE_NAME:
        raise fail("name", f'The name "{ROOT_QUEUE_NAME}" is reserved for the implicit root queue.')
    return check_unique_name(Queue, "queue", name, queue)


def _resolve_queue(parent: Queue | str | None, field: str) -> Queue | None:
    if parent is None or parent == "":
        return None
    if isinstance(parent, Queue):
        return parent
    if parent == ROOT_QUEUE_NAME:
        return None  # the implicit root: top level
    check_text(parent, field, max_length=253)  # before the lookup: PostgreSQL refuses NUL
    found = Queue.objects.filter(name=parent).first()
    if found is None:
        raise fail(field, f"Unknown queue {parent!r}.")
    return found


def _check_parent(parent: Queue | str | None, queue: Queue | None) -> Queue | None:
    """The parent (a queue, its name, or None / "root" for the top level). It must not be the
    queue or one of its descendants, and must hold no jobs."""
    found = _resolve_queue(parent, "parent")
    if found is None:
        return None
    if queue is not None and queue.pk is not None:
        seen: set[int] = set()
        node: Queue | None = found
        while node is not None and node.pk not in seen:
            if node.pk == queue.pk:
                raise fail("parent", f"Queue {queue.name!r} cannot be placed under {found.name!r}: "
                                     "that would make a cycle.")
            seen.add(node.pk)
            node = Queue.objects.filter(pk=node.parent_id).first() if node.parent_id else None
    if found.jobs.exists():
        raise fail("parent", f"Queue {found.name!r} holds jobs; only leaf queues hold jobs, so it "
                             "cannot get child queues.")
    return found


# Each column of a queue and its check, in the order create and update validate them.
QUEUE_CHECKS = FieldChecks({
    "name": _check_queue_name,
    "parent": _check_parent,
    "weight": field_check(check_int, "weight", minimum=1),
    "priority": field_check(check_int, "priority"),
    "state": field_check(check_choice, "state", choices=QueueState.values),
    "reclaimable": as_bool,
    **{field: field_check(parse_resources, field) for field in RESOURCE_FIELDS},
    "annotations": field_check(check_object, "annotations"),
})


def _set_acl(queue: Queue, **acl: Iterable | None) -> None:
    for field, members in acl.items():
        if members is not None and members is not UNSET:
            getattr(queue, field).set(list(members))


@transaction.atomic
def queue_create(*, name: str, parent: Queue | str | None = None, weight: int = 1, priority: int = 0,
                 state: str = QueueState.OPEN, reclaimable: bool = True, capability: Any = None,
                 deserved: Any = None, guarantee: Any = None, annotations: dict | None = None,
                 admin_users: Iterable | None = None, admin_groups: Iterable | None = None,
                 submitter_users: Iterable | None = None, submitter_groups: Iterable | None = None,
                 actor: Any = None) -> Queue:
    """Create a queue (parent None or "root" = top level); resource maps accept quantities.

    `actor` (every write service takes it) is the user the audit log names; None = the user of
    the current request, or "system". The parent's chain is locked (lock_chains) before the
    checks, so the parent's jobs and its children's limits are read as they are."""
    found = _resolve_queue(parent, "parent")
    if found is not None:
        if found.pk not in lock_chains([found.pk]):
            raise fail("parent", f"Unknown queue {found.name!r}.")
        found = Queue.objects.get(pk=found.pk)
    values = QUEUE_CHECKS.for_create(
        name=name, parent=found, weight=weight, priority=priority, state=state, reclaimable=reclaimable,
        capability=capability, deserved=deserved, guarantee=guarantee, annotations=annotations)
    check_queue_limits(queue=None, name=name, parent=values["parent"],
                       **{field: values[field] for field in RESOURCE_FIELDS})
    queue = Queue.objects.create(**values)
    _set_acl(queue, admin_users=admin_users, admin_groups=admin_groups,
             submitter_users=submitter_users, submitter_groups=submitter_groups)
    _audit_queue(AuditAction.CREATE, queue, None, snapshots.queue_snapshot(queue), actor)
    return queue


def _share_settings(queue: Queue) -> dict[str, Any]:
    return {"id": queue.pk, "name": queue.name, "parent_id": queue.parent_id,
            **{f: getattr(queue, f) for f in SHARE_FIELDS}}


@transaction.atomic
def queue_update(*, queue: Queue, name: Any = UNSET, parent: Any = UNSET, weight: Any = UNSET,
                 priority: Any = UNSET, state: Any = UNSET, reclaimable: Any = UNSET,
                 capability: Any = UNSET, deserved: Any = UNSET, guarantee: Any = UNSET,
                 annotations: Any = UNSET, admin_users: Any = UNSET, admin_groups: Any = UNSET,
                 submitter_users: Any = UNSET, submitter_groups: Any = UNSET, actor: Any = None,
                 access: QueueAccess | None = None, expected_version: int | None = None) -> Queue:
    """Change the given fields of a queue (others keep their value).

    The queue and its ancestors (and a new parent's) are locked first (queue_locks.lock_chains), then every
    check reads the tree as it is. `access`: the user's rights, for the rule on what a sub-queue
    admin may take from the siblings (schedweb.core.queue_share; None: a system write, not
    subject to it). `expected_version`: the version the caller read (StaleVersion when the
    queue has changed since); each update adds 1 to it."""
    target = _resolve_queue(parent, "parent") if parent is not UNSET else None
    lock_chains([queue.pk, target.pk if target is not None else None])
    queue = Queue.objects.get(pk=queue.pk)
    _check_version(queue, expected_version)
    before = snapshots.queue_snapshot(queue)
    before_parent, before_share = queue.parent_id, _share_settings(queue)
    QUEUE_CHECKS.apply(queue, name=name, parent=parent if target is None else target, weight=weight,
                       priority=priority, state=state, reclaimable=reclaimable, capability=capability,
                       deserved=deserved, guarantee=guarantee, annotations=annotations)
    if any(v is not UNSET for v in (capability, deserved, guarantee, parent)):
        check_queue_limits(queue=queue, name=queue.name, parent=queue.parent, capability=queue.capability,
                           deserved=queue.deserved, guarantee=queue.guarantee,
                           parent_changed=parent is not UNSET and queue.parent_id != before_parent)
    shares = (weight, priority, reclaimable, deserved, guarantee)
    if access is not None and any(v is not UNSET for v in shares):
        check_sibling_share(access=access, tree=load_tree(), qid=queue.pk, before=before_share,
                            after=_share_settings(queue))
    queue.version += 1
    queue.save()
    _set_acl(queue, admin_users=admin_users, admin_groups=admin_groups,
             submitter_users=submitter_users, submitter_groups=submitter_groups)
    _audit_queue(AuditAction.UPDATE, queue, before, snapshots.queue_snapshot(queue), actor)
    return queue


@transaction.atomic
def queue_delete(*, queue: Queue, actor: Any = None, expected_version: int | None = None) -> None:
    """Delete a queue without child queues and without jobs; never the default queue.

    The row is locked (FOR UPDATE) before its children and jobs are counted: a submission into
    it (FOR SHARE, schedweb.core.queue_locks.lock_queues) or a child being created (lock_chains)
    either commits first and is counted, or waits and finds the queue gone."""
    found = Queue.objects.select_for_update().filter(pk=queue.pk).first()
    if found is None:
        raise fail("queue", f"Queue {queue.name!r} no longer exists.")
    queue = found
    _check_version(queue, expected_version)
    if queue.name == default_queue_name():
        # Volcano's queue webhook: "`default` queue can not be deleted" (closing it is allowed).
        raise fail("queue", f"Queue {queue.name!r} is the default queue (DEFAULT_QUEUE): jobs that name no "
                            "queue go there, so it cannot be deleted; close it instead.")
    if queue.children.exists():
        raise fail("queue", f"Queue {queue.name!r} has child queues; delete or move them first.")
    if queue.jobs.exists():
        raise fail("queue", f"Queue {queue.name!r} has jobs; it can be deleted once they are gone.")
    before, pk = snapshots.queue_snapshot(queue), queue.pk
    queue.delete()
    queue.pk = pk  # the entry keeps the id, so admins of the parent still see the deletion
    _audit_queue(AuditAction.DELETE, queue, before, None, actor)


@transaction.atomic
def queue_set_state(*, queue: Queue, state: str, actor: Any = None,
                    expected_version: int | None = None) -> Queue:
    """Open or close a queue. Closing a queue with unfinished jobs makes it Closing (Volcano)."""
    check_choice(state, "state", QueueState.values)
    queue = Queue.objects.select_for_update().get(pk=queue.pk)
    _check_version(queue, expected_version)
    before = snapshots.queue_snapshot(queue)
    if state in (QueueState.CLOSED, QueueState.CLOSING):
        busy = queue.jobs.exclude(phase__in=TERMINAL_JOB_PHASES).exists()
        state = QueueState.CLOSING if busy else QueueState.CLOSED
    queue.state = state
    queue.version += 1
    queue.save(update_fields=["state", "version", "updated"])
    _audit_queue(AuditAction.SET_STATE, queue, before, {**before, "state": queue.state}, actor)
    return queue

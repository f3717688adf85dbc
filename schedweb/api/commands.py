"""API input (validated serializer data, names instead of objects) to schedweb.core.services calls.

Views and the manifest import share these, so a Queue from YAML and a Queue from JSON pass the
same checks: permissions, name resolution with field errors, then exactly one service call.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError
from rest_framework.exceptions import PermissionDenied

from schedweb.api import limits
from schedweb.api.exceptions import IdempotencyKeyReused
from schedweb.core import services
from schedweb.core.access import QueueAccess
from schedweb.core.job_store import QueueRef, load_context, resolve
from schedweb.core.job_submission import JobDraft, JobExists, PendingBudget, draft_job
from schedweb.core.models import ROOT_QUEUE_NAME, Job, PriorityClass, Queue
from schedweb.core.queue_locks import QueueChanged
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


def queue_update(*, access: QueueAccess, queue: Queue, data: dict[str, Any],
                 expected_version: int | None = None) -> Queue:
    """Change a queue (only the given keys); moving it also needs admin rights on the new parent,
    and what it takes from its siblings the parent's (schedweb.core.queue_share).
    `expected_version`: the If-Match version (StaleVersion when the queue has moved on)."""
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
        queue = services.queue_update(queue=queue, actor=access.user, access=access,
                                      expected_version=expected_version, **changes)
        expected_version = queue.version if expected_version is not None else None
    if data.get("state") and data["state"] != queue.state:
        queue = services.queue_set_state(queue=queue, state=data["state"], actor=access.user,
                                         expected_version=expected_version)
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


@dataclass
class SubmitItem:
    """One job of a submission: the validated body (names, not objects) and its Idempotency-Key
    with the hash of the body it came with (see body_hash)."""

    data: dict[str, Any]
    idempotency_key: str | None = None
    request_hash: str = ""
    passthrough: dict[str, Any] | None = None


@dataclass
class SubmitOutcome:
    """What became of one item: the job (created, or replayed for a known key), or the error it
    raises (django ValidationError / JobExists, DRF PermissionDenied, IdempotencyKeyReused)."""

    job: Job | None = None
    created: bool = False
    error: Exception | None = None


def submit_jobs(*, access: QueueAccess, items: list[SubmitItem], atomic: bool = True,
                warnings: bool = False) -> list[SubmitOutcome]:
    """Submit jobs with one read (queues, rights, classes, names, keys: schedweb.core.job_store)
    and one write (every job and task in one statement). `atomic`: if any item fails, nothing is
    written and the outcomes carry the errors; else the good items are written and the others
    answered each. `warnings`: NeverFits warnings on created jobs (job.submit_warnings).

    Per item, in order: a known Idempotency-Key with the same body replays the first job (another
    body: IdempotencyKeyReused); a bad queue is a 400; no right to submit there is a 403; any
    other problem a 400 listing every field, a taken name alone JobExists (the API's 409).
    """
    user = access.user
    # Bounded work per request, before any task entry is expanded (schedweb.api.limits).
    limits.check_request_tasks(sum(limits.job_tasks(item.data) for item in items),
                               "jobs" if len(items) > 1 else "tasks")
    drafts = [_draft(item, user) for item in items]
    keys = [i.idempotency_key for i, d in zip(items, drafts, strict=True)
            if i.idempotency_key and "Idempotency-Key" not in d.problems.fields]  # text that can be looked up
    ctx = load_context(drafts, user=user, keys=keys, fingerprint=warnings)
    outcomes = [SubmitOutcome() for _ in items]
    replay_ids: dict[int, int] = {}      # item -> id of the job its key already made
    replay_items: dict[int, int] = {}    # item -> earlier item of this request with the same key
    first_key: dict[str, int] = {}
    first_name: dict[tuple[Any, Any], int] = {}
    for i, (item, draft) in enumerate(zip(items, drafts, strict=True)):
        key = item.idempotency_key
        if key and "Idempotency-Key" not in draft.problems.fields:
            known = ctx.keys.get(key)
            if known is not None:
                if _same_body(known[1], known[2], known[3], item):
                    replay_ids[i] = known[0]
                else:
                    outcomes[i].error = _reused(known[2], known[3])
                continue
            if key in first_key:
                earlier = items[first_key[key]]
                ns, name = earlier.data.get("namespace"), earlier.data.get("name")
                if _same_body(earlier.request_hash, ns, name, item):
                    replay_items[i] = first_key[key]
                else:
                    outcomes[i].error = _reused(earlier.data.get("namespace"), earlier.data.get("name"))
                continue
            first_key[key] = i
        outcomes[i].error = _check(access, draft, resolve(draft, ctx))
        pair = (draft.namespace, draft.name)
        if outcomes[i].error is None and pair in first_name:
            outcomes[i].error = JobExists({"name": [f"Job {pair[0]}/{pair[1]} is submitted twice in this "
                                                    "request."]})
        first_name.setdefault(pair, i)
    _admit_pending(user, drafts, outcomes, skip=set(replay_ids) | set(replay_items))
    if atomic and any(o.error is not None for o in outcomes):
        return outcomes
    todo = [i for i, o in enumerate(outcomes)
            if o.error is None and i not in replay_ids and i not in replay_items]
    _insert(access, items, drafts, todo, outcomes, atomic)
    created = [outcomes[i].job for i in todo if outcomes[i].created]
    if warnings and created:
        from schedweb.scheduling.never_fits_check import submit_warnings

        for job, found in zip(created, submit_warnings(created, ctx.fingerprint), strict=True):
            job.submit_warnings = found
    if replay_ids:
        stored = {j.pk: j for j in Job.objects.select_related("queue", "priority_class", "submitted_by")
                  .filter(pk__in=set(replay_ids.values()))}
        for i, pk in replay_ids.items():
            outcomes[i].job = stored.get(pk)
    for i, j in replay_items.items():
        outcomes[i].job, outcomes[i].error = outcomes[j].job, outcomes[j].error
    return outcomes


def _admit_pending(user: Any, drafts: list[JobDraft], outcomes: list[SubmitOutcome], skip: set[int]) -> None:
    """The waiting-jobs limits (per submitter, per queue): in request order, each new job while
    some is left; the others get TooManyPendingJobs (429)."""
    new = [i for i, o in enumerate(outcomes) if o.error is None and i not in skip]
    if not new:
        return
    queues = {d.queue_obj.pk: d.queue_obj.name for d in (drafts[i] for i in new) if d.queue_obj is not None}
    budget = PendingBudget(user, queues)
    for i in new:
        queue = drafts[i].queue_obj
        over = budget.take(queue.pk if queue is not None else None, drafts[i].fields["phase"])
        if over is not None:
            outcomes[i].error = limits.TooManyPendingJobs(over.message, over.setting)


def _draft(item: SubmitItem, user: Any) -> JobDraft:
    data = item.data
    kwargs = {k: v for k, v in data.items() if k not in ("queue", "priority_class")}
    return draft_job(queue=data.get("queue"), priority_class=data.get("priority_class"), submitted_by=user,
                     idempotency_key=item.idempotency_key or None,
                     idempotency_hash=item.request_hash if item.idempotency_key else "",
                     passthrough=item.passthrough, **kwargs)


def _check(access: QueueAccess, draft: JobDraft, ref: QueueRef | None) -> Exception | None:
    """The item's error, in the order callers see them: queue, rights, then everything else."""
    problems = draft.problems
    if "queue" in problems.fields:
        return problems.error()
    if ref is not None and not (access.is_staff or ref.can_admin or ref.can_submit):
        return PermissionDenied(f"You may not submit jobs to queue {ref.name}.")
    return problems.error() if problems.fields else None


def _same_body(stored_hash: str, namespace: Any, name: Any, item: SubmitItem) -> bool:
    # Jobs stored before bodies were hashed compare namespace and name.
    if stored_hash and item.request_hash:
        return stored_hash == item.request_hash
    return (namespace, name) == (item.data.get("namespace"), item.data.get("name"))


def _reused(namespace: Any, name: Any) -> IdempotencyKeyReused:
    return IdempotencyKeyReused(f"Idempotency-Key already used for job {namespace}/{name} with a "
                                "different request body; use a new key for a different request.")


def _insert(access: QueueAccess, items: list[SubmitItem], drafts: list[JobDraft], todo: list[int],
            outcomes: list[SubmitOutcome], atomic: bool) -> None:
    """Write the todo items in one statement. A race (a name or key taken since the read, so the
    statement wrote nothing) is answered per item from a second read: a retry with the same key
    and body gets the winner's job, a taken name is JobExists; then an atomic request stops
    (nothing written), a partial one writes the rest."""
    built: list[Any] = []
    for attempt in range(3):
        if not todo:
            return
        try:
            built = services.jobs_insert(drafts=[drafts[i] for i in todo])
            break
        except QueueChanged as exc:  # a queue deleted or split since the read: its items are 409s
            for i in todo:
                pk = drafts[i].queue_obj.pk if drafts[i].queue_obj is not None else None
                if pk in exc.by_queue:
                    outcomes[i].error = QueueChanged({pk: exc.by_queue[pk]})
            if atomic or attempt == 2:
                return
            todo = [i for i in todo if outcomes[i].error is None]
        except IntegrityError as exc:
            if attempt == 2 or not _recheck(access, items, drafts, todo, outcomes):
                raise exc from None
            if atomic and any(outcomes[i].error is not None for i in todo):
                return
            todo = [i for i in todo if outcomes[i].error is None and outcomes[i].job is None]
    for i, (job, tasks) in zip(todo, built, strict=True):
        statuses = [t["status"] for t in tasks]
        job.task_count, job.running_count, job.pending_count = (
            len(tasks), statuses.count("Running"), statuses.count("Pending"))
        job._new_tasks = tasks  # task rows: the detail's first page and the NeverFits check read them
        job._reason_history = []
        outcomes[i].job, outcomes[i].created = job, True


def _recheck(access: QueueAccess, items: list[SubmitItem], drafts: list[JobDraft], todo: list[int],
             outcomes: list[SubmitOutcome]) -> bool:
    """After a refused insert: which items collide now (answered in `outcomes`); False if none."""
    ctx = load_context([drafts[i] for i in todo], user=access.user,
                       keys=[items[i].idempotency_key for i in todo if items[i].idempotency_key])
    found = False
    replays: dict[int, int] = {}
    for i in todo:
        item, draft = items[i], drafts[i]
        known = ctx.keys.get(item.idempotency_key) if item.idempotency_key else None
        if known is not None:
            found = True
            if _same_body(known[1], known[2], known[3], item):
                replays[i] = known[0]
            else:
                outcomes[i].error = _reused(known[2], known[3])
        elif (draft.namespace, draft.name) in ctx.taken:
            found = True
            outcomes[i].error = JobExists({"name": [f"Job {draft.namespace}/{draft.name} already exists."]})
    stored = {j.pk: j for j in Job.objects.select_related("queue", "priority_class", "submitted_by")
              .filter(pk__in=set(replays.values()))} if replays else {}
    for i, pk in replays.items():
        outcomes[i].job = stored.get(pk)
    return found


def job_submit(*, access: QueueAccess, data: dict[str, Any], idempotency_key: str | None = None,
               request_hash: str = "", passthrough: dict[str, Any] | None = None,
               warnings: bool = False) -> tuple[Job, bool]:
    """Submit one job; returns (job, created). A known Idempotency-Key with the same body
    (`request_hash`, see body_hash) returns the first job instead; with another body it is a 409.
    Raises django ValidationError (every field problem; JobExists for a taken name), DRF
    PermissionDenied or IdempotencyKeyReused."""
    if idempotency_key:
        check_text(idempotency_key, "Idempotency-Key", max_length=255)
    item = SubmitItem(data, idempotency_key, request_hash, passthrough)
    [outcome] = submit_jobs(access=access, items=[item], warnings=warnings)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.job is not None
    return outcome.job, outcome.created

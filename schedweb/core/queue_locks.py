"""The locks of the queue tree: what makes its checks hold under concurrent writes.

Queue writes (schedweb.core.queue_services) lock the queue and its ancestors FOR NO KEY UPDATE
(lock_chains), deletes the queue FOR UPDATE; submissions (schedweb.core.job_store) lock their
queues FOR SHARE (lock_queues). Each side checks after its lock (READ COMMITTED: a statement
after the lock reads what was committed before it), so of two conflicting writes the second
sees the first: two children's guarantees never add up past their parent's, a job never lands
in a queue being deleted or getting children. Rows are locked in id order, so the writes do not
deadlock each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import connection

from schedweb.core.models import Queue

if TYPE_CHECKING:
    from schedweb.core.job_submission import JobDraft


def lock_chains(ids: Iterable[int | None]) -> set[int]:
    """Lock the queues `ids` and all their ancestors (FOR NO KEY UPDATE, in id order: every
    queue write locks this way, so two never deadlock) until the transaction ends; returns the
    ids locked (a queue deleted meanwhile is missing).

    Every limit (schedweb.core.queue_limits) involves a queue and its ancestors, so two writes
    whose checks could skew (two children of one parent, a parent and a grandchild) wait for
    each other. The lock also conflicts with the FOR SHARE a submission takes on its queue
    (lock_queues below): a child is never created under a queue a job is
    being submitted into."""
    wanted: set[int] = set()
    parents: dict[int, int | None] = {}
    todo = {i for i in ids if i is not None}
    locked: dict[int, int | None] = {}
    for _ in range(5):  # a concurrent move may change a chain between the read and the lock
        if not parents or todo - set(parents):
            parents = dict(Queue.objects.values_list("id", "parent_id"))
        for qid in todo:
            node: int | None = qid
            while node is not None and node not in wanted:
                wanted.add(node)
                node = parents.get(node)
        locked = dict(Queue.objects.select_for_update(no_key=True).filter(pk__in=wanted).order_by("pk")
                      .values_list("pk", "parent_id"))
        todo = {p for p in locked.values() if p is not None and p not in wanted}
        if not todo:
            break
        parents = {}
    return set(locked)


class QueueChanged(ValidationError):
    """A queue the drafts go into was deleted, or got child queues, after the submission read it
    (a concurrent write won): the API answers 409 `conflict`. `by_queue`: {queue id: message}."""

    def __init__(self, by_queue: dict[int, str]) -> None:
        super().__init__({"queue": [by_queue[min(by_queue)]]})
        self.by_queue = by_queue


def lock_queues(drafts: list[JobDraft], *, check_leaves: bool = True) -> None:
    """Lock the drafts' queues FOR SHARE until the transaction ends, then check each still
    exists and (`check_leaves`) is still a leaf (QueueChanged if not). The PostgreSQL insert of
    schedweb.core.job_store checks leaves in its own statement instead (one round trip less),
    and calls raise_if_split when it wrote nothing.

    The lock conflicts with the FOR UPDATE of a queue delete and the FOR NO KEY UPDATE of a
    child being created (schedweb.core.queue_services), which lock first and count the queue's
    jobs after: whichever comes second sees what the first committed. The leaf check is its own
    statement so that it reads after the lock was granted (READ COMMITTED: a fresh snapshot)."""
    queues = {d.queue_obj.pk: d.queue_obj.name for d in drafts if d.queue_obj is not None}
    ids = sorted(queues)
    # SQLite has no row locks: its writers take the database lock at BEGIN (IMMEDIATE).
    found = (_share_locked(ids) if connection.vendor == "postgresql"
             else set(Queue.objects.filter(pk__in=ids).values_list("pk", flat=True)))
    changed = {i: f"Queue {queues[i]!r} was deleted while this job was being submitted."
               for i in ids if i not in found}
    if changed:
        raise QueueChanged(changed)
    if check_leaves:
        raise_if_split(drafts)


def raise_if_split(drafts: list[JobDraft]) -> None:
    """QueueChanged naming the drafts' queues that have child queues by now, if any."""
    queues = {d.queue_obj.pk: d.queue_obj.name for d in drafts if d.queue_obj is not None}
    split = set(Queue.objects.filter(parent_id__in=sorted(queues)).values_list("parent_id", flat=True))
    if split:
        raise QueueChanged({i: f"Queue {queues[i]!r} got child queues while this job was being submitted; "
                               "jobs go into leaf queues only." for i in split})


def _share_locked(ids: list[int]) -> set[int]:
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {qn(Queue._meta.db_table)} WHERE id = ANY(%s) ORDER BY id FOR SHARE",
                       [ids])
        return {row[0] for row in cursor.fetchall()}



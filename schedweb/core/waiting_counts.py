"""Waiting jobs (Pending or Inqueue) counted for admission in one statement (README "Input limits").

`waiting_counts(...)` answers, in one round trip (a UNION ALL of the parts asked for, none asked =
no query):

- `user`: the submitter's waiting jobs, capped at `user_cap` (reading stops there: the index on
  (submitted_by, phase) gives the rows, at most the cap of them);
- `queues`: the waiting jobs of each queue asked (0 for a queue with none);
- `known_key`: whether one of `keys` is an Idempotency-Key this submitter already used;
- `names_found`: how many of the (namespace, name) pairs exist (the unique name index).

schedweb.core.job_submission.PendingBudget asks for the first two; the API's pending gate
(schedweb.api.pending_gate) for the user's count with the keys or names that decide whether a
submission at the limit would still be answered from what exists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection

from schedweb.core.choices import WAITING_JOB_PHASES
from schedweb.core.models import Job


@dataclass(frozen=True)
class WaitingCounts:
    """What one waiting_counts() statement found (see the module docstring)."""

    user: int = 0
    queues: dict[int, int] = field(default_factory=dict)
    known_key: bool = False
    names_found: int = 0


def _column(name: str) -> str:
    return connection.ops.quote_name(Job._meta.get_field(name).column)


def waiting_counts(*, user_id: int | None = None, user_cap: int = 0, queue_ids: Iterable[int] = (),
                   keys: Iterable[str] = (), names: Iterable[tuple[str, str]] = ()) -> WaitingCounts:
    """The counts asked for, in one query: the user's waiting jobs up to `user_cap` (when
    `user_id` and a positive cap are given), each queue's, whether one of `keys` is the user's,
    how many of `names` exist. Keys and names must be storable text (checked by the caller)."""
    table = connection.ops.quote_name(Job._meta.db_table)
    submitter, phase = _column("submitted_by"), _column("phase")
    phases = ", ".join(["%s"] * len(WAITING_JOB_PHASES))
    parts: list[str] = []
    params: list[object] = []
    if user_id is not None and user_cap > 0:
        parts.append(f"SELECT 'u', NULL, COUNT(*) FROM (SELECT 1 FROM {table} WHERE {submitter} = %s "
                     f"AND {phase} IN ({phases}) LIMIT %s) AS waiting")
        params += [user_id, *WAITING_JOB_PHASES, user_cap]
    queues = sorted(set(queue_ids))
    if queues:
        queue = _column("queue")
        parts.append(f"SELECT 'q', {queue}, COUNT(*) FROM {table} WHERE {queue} IN "
                     f"({', '.join(['%s'] * len(queues))}) AND {phase} IN ({phases}) GROUP BY {queue}")
        params += [*queues, *WAITING_JOB_PHASES]
    wanted = sorted(set(keys))
    if user_id is not None and wanted:
        parts.append(f"SELECT 'k', NULL, COUNT(*) FROM (SELECT 1 FROM {table} WHERE {submitter} = %s AND "
                     f"{_column('idempotency_key')} IN ({', '.join(['%s'] * len(wanted))}) LIMIT 1) AS known")
        params += [user_id, *wanted]
    pairs = sorted(set(names))
    if pairs:
        match = f"({_column('namespace')} = %s AND {_column('name')} = %s)"
        parts.append(f"SELECT 'n', NULL, COUNT(*) FROM {table} WHERE " + " OR ".join([match] * len(pairs)))
        params += [text for pair in pairs for text in pair]
    if not parts:
        return WaitingCounts()
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        rows = cursor.fetchall()
    found = {kind: n for kind, _, n in rows if kind != "q"}
    per_queue = {pk: n for kind, pk, n in rows if kind == "q"}
    return WaitingCounts(user=found.get("u", 0), queues={q: per_queue.get(q, 0) for q in queues},
                         known_key=bool(found.get("k")), names_found=found.get("n", 0))

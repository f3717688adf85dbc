"""The cycle's PodGroup conditions: `SessionResult.conditions` into JobCondition rows.

Volcano's gang plugin sets every job's condition at each session close, and its cache writes a
PodGroup back only when a condition's status, reason or message changed (the transition time and
id aside). The same here: a condition is written only when it says something new, so its
`last_transition_time` stays while it does not, and a steady cycle writes nothing. What is stored
is kept in memory (per job and type) to tell without a query; that memory is rebuilt from the
table on every full snapshot load (start, another process's cycle, a failed cycle, periodically),
and the upsert itself is conditional, so a stale memory can cost a write, never a wrong row.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import connection

from scheduler_core.result import SessionResult
from schedweb.core.models import TERMINAL_JOB_PHASES, Job
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.models import JobCondition
from schedweb.scheduling.writes import is_postgres

Stored = tuple[str, str, str]  # status, reason, message
_known: dict[int, dict[str, Stored]] = {}  # job id -> type -> what the table holds
_loaded = [False]
_TERMINAL = frozenset(str(p) for p in TERMINAL_JOB_PHASES)  # plain strings: a set lookup


def forget() -> None:
    """Drop the memory of what is stored (the cycle failed: its writes rolled back)."""
    _known.clear()
    _loaded[0] = False


def changed(state: LoadedState, result: SessionResult) -> list[tuple[int, str, Stored, datetime]]:
    """(job id, type, (status, reason, message), time) of the conditions the table lacks."""
    if state.full or not _loaded[0]:
        _known.clear()
        for job_id, kind, *stored in JobCondition.objects.values_list("job_id", "type", "status", "reason",
                                                                      "message").iterator(chunk_size=5000):
            _known.setdefault(job_id, {})[kind] = tuple(stored)  # type: ignore[assignment]
        _loaded[0] = True
    out = []
    jobs, known, none = state.jobs.get, _known.get, _NONE
    for uid, cond in result.conditions.items():
        row = jobs(uid)
        if row is None or row.phase in _TERMINAL:
            continue
        value = (cond.status, cond.reason, cond.message)
        if known(row.id, none).get(cond.type) != value:
            out.append((row.id, cond.type, value, datetime.fromtimestamp(int(cond.transition_time), tz=UTC)))
    return out


_NONE: dict[str, Stored] = {}  # a job with no stored condition (looked in, never filled)


UPSERT = f"""
INSERT INTO {JobCondition._meta.db_table} (job_id, type, status, reason, message, last_transition_time)
SELECT v.job_id, v.type, v.status, v.reason, v.message, v.at
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::timestamptz[])
     AS v(job_id, type, status, reason, message, at)
ON CONFLICT (job_id, type) DO UPDATE SET status = EXCLUDED.status, reason = EXCLUDED.reason,
    message = EXCLUDED.message, last_transition_time = EXCLUDED.last_transition_time
WHERE ({JobCondition._meta.db_table}.status, {JobCondition._meta.db_table}.reason,
       {JobCondition._meta.db_table}.message)
      IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.reason, EXCLUDED.message)
"""


def write(rows: list[tuple[int, str, Stored, datetime]]) -> int:
    """Store the changed conditions (jobs deleted meanwhile skipped); returns rows written."""
    if not rows:
        return 0
    if is_postgres():
        with connection.cursor() as cursor:
            # KEY SHARE: a job deleted meanwhile is skipped, one deleted now waits for this cycle.
            cursor.execute(f"SELECT id FROM {Job._meta.db_table} WHERE id = ANY(%s) ORDER BY id "
                           "FOR KEY SHARE", [sorted({r[0] for r in rows})])
            alive = {r[0] for r in cursor.fetchall()}
            rows = [r for r in rows if r[0] in alive]
            if rows:
                columns = [[r[0] for r in rows], [r[1] for r in rows]]
                columns += [[r[2][i] for r in rows] for i in range(3)]
                cursor.execute(UPSERT, [*columns, [r[3] for r in rows]])
    else:
        alive = set(Job.objects.filter(id__in={r[0] for r in rows}).values_list("id", flat=True))
        rows = [r for r in rows if r[0] in alive]
        for job_id, kind, (status, reason, message), at in rows:
            JobCondition.objects.update_or_create(job_id=job_id, type=kind, defaults={
                "status": status, "reason": reason, "message": message, "last_transition_time": at})
    for job_id, kind, value, _ in rows:
        _known.setdefault(job_id, {})[kind] = value
    return len(rows)

"""The cycle's PodGroup conditions: `SessionResult.conditions` into JobCondition rows.

Volcano's gang plugin sets every job's condition at each session close, and its cache writes a
PodGroup back only when a condition's status, reason or message changed (the transition time and
id aside). The same here: a condition is written only when it says something new, so its
`last_transition_time` stays while it does not, and a steady cycle writes nothing. What is stored
is kept in memory (per job and type) to tell without a query; that memory is rebuilt from the
table on every full snapshot load (start, another process's cycle, a failed cycle, periodically),
and the upsert itself is conditional, so a stale memory can cost a write, never a wrong row.

The session gives every job a condition every cycle (new objects: their time is the session's),
so `changed` keeps, with the incremental loader's kept snapshot (`incremental.row_log`), each
job's condition words as last found stored (one tuple per distinct wording, so the jobs that
share one are told by identity) and looks a job up again only when its words differ, its row
moved, or the memory of what is stored was rebuilt since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import connection

from scheduler_core.result import SessionResult
from schedweb.core.models import TERMINAL_JOB_PHASES, Job
from schedweb.scheduling import incremental
from schedweb.scheduling.adapter import LoadedState
from schedweb.scheduling.models import JobCondition
from schedweb.scheduling.writes import is_postgres

Stored = tuple[str, str, str]  # status, reason, message
_known: dict[int, dict[str, Stored]] = {}  # job id -> type -> what the table holds
_loaded = [False]
_TERMINAL = frozenset(str(p) for p in TERMINAL_JOB_PHASES)  # plain strings: a set lookup
_epoch = [0]  # rebuilds of `_known`: a kept Memo from before one is not trusted
MEMO_KEY = "job_conditions"  # this module's entry in the row log's memo
WORDINGS_MAX = 200_000  # distinct condition wordings kept (a bound, not a working size)
Key = tuple[str, str, str, str]  # type, status, reason, message


@dataclass(slots=True)
class Memo:
    """Per job uid, the condition words last found stored; valid for one row log generation and
    one `_known` epoch."""

    gen: int
    epoch: int
    seen: dict[str, Key] = field(default_factory=dict)
    wordings: dict[Key, Key] = field(default_factory=dict)  # each wording's one tuple


def forget() -> None:
    """Drop the memory of what is stored (the cycle failed: its writes rolled back)."""
    _known.clear()
    _loaded[0] = False


def changed(state: LoadedState, result: SessionResult) -> list[tuple[int, str, Stored, datetime]]:
    """(job id, type, (status, reason, message), time) of the conditions the table lacks."""
    if state.full or not _loaded[0]:
        _epoch[0] += 1
        _known.clear()
        for job_id, kind, *stored in JobCondition.objects.values_list("job_id", "type", "status", "reason",
                                                                      "message").iterator(chunk_size=5000):
            _known.setdefault(job_id, {})[kind] = tuple(stored)  # type: ignore[assignment]
        _loaded[0] = True
    log = incremental.row_log(state)
    memo = log.memo.get(MEMO_KEY) if log is not None else None
    if log is None or memo is None or memo.gen != log.gen - 1 or memo.epoch != _epoch[0]:
        memo = Memo(0, _epoch[0])
    else:
        for uid in log.moved | log.own:
            memo.seen.pop(uid, None)
    if len(memo.wordings) > WORDINGS_MAX:
        memo.wordings.clear()  # the jobs kept with older tuples are looked up again, that is all
    out = []
    jobs, known, none = state.jobs.get, _known.get, _NONE
    seen, wordings = memo.seen, memo.wordings
    last, key = None, None
    for uid, cond in result.conditions.items():
        if cond is not last:  # the ready jobs share one condition object
            last = cond
            key = (cond.type, cond.status, cond.reason, cond.message)
            key = wordings.setdefault(key, key)
        if seen.get(uid) is key:
            continue  # the words, the row and what is stored are as they were: still stored
        assert key is not None
        row = jobs(uid)
        if row is not None and row.phase not in _TERMINAL and known(row.id, none).get(key[0]) != key[1:]:
            seen.pop(uid, None)
            out.append((row.id, key[0], key[1:], datetime.fromtimestamp(int(cond.transition_time), tz=UTC)))
        else:
            seen[uid] = key
    if log is not None:
        memo.gen = log.gen
        log.memo[MEMO_KEY] = memo
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

"""Writing and pruning shared pod specs (`core.TaskSpec`): each distinct spec is stored once.

`spec_ids(specs)` returns the row id of each (digest, values) pair, inserting the missing ones
(PostgreSQL: one read of the digests, one insert of the new rows; a spec inserted meanwhile by
another transaction is read back, never duplicated: the digest is unique). `attach_specs(tasks)`
points Task objects carrying spec values at their rows, `attach_spec_ids(rows)` task dicts (the
submit path: the replicas of an entry are digested once), `task_objects(job, rows)` builds the
inserted rows' Task objects sharing one TaskSpec object per spec; `prune_task_specs()` deletes the rows no
task refers to any more (job_delete and a re-applied job's task replacement prune the specs of
the tasks they delete).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import psycopg
from django.db import IntegrityError, connection, transaction

from schedweb.core.models import Job, Task, TaskSpec
from schedweb.core.task_spec_values import SPEC_DEFAULTS, SPEC_FIELDS, DigestMemo, spec_digest, spec_values

_COLUMNS = ("digest", *SPEC_FIELDS)
_INSERT = (f"INSERT INTO core_taskspec ({', '.join(_COLUMNS)}) "
           f"SELECT * FROM unnest(%s::text[], {', '.join(['%s::text[]::jsonb[]'] * len(SPEC_FIELDS))}) "
           "ORDER BY 1 ON CONFLICT (digest) DO NOTHING RETURNING digest, id")
# FOR KEY SHARE: a spec this submission will refer to cannot be pruned before it commits.
_SELECT = "SELECT digest, id FROM core_taskspec WHERE digest = ANY(%s) FOR KEY SHARE"


def _cursor() -> Any:
    connection.ensure_connection()
    # Server-side binding, as job_store: the values travel as array parameters.
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    return wrap(psycopg.Cursor(connection.connection))


def _text(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def spec_ids(specs: dict[str, dict[str, Any]]) -> dict[str, int]:
    """digest -> TaskSpec id for every (digest -> spec values) given, inserting missing specs."""
    if not specs:
        return {}
    digests = sorted(specs)
    if connection.vendor != "postgresql":
        found = dict(TaskSpec.objects.filter(digest__in=digests).values_list("digest", "id"))
        TaskSpec.objects.bulk_create([TaskSpec(digest=d, **specs[d]) for d in digests if d not in found],
                                     ignore_conflicts=True)
        return dict(TaskSpec.objects.filter(digest__in=digests).values_list("digest", "id"))
    with _cursor() as cursor:
        cursor.execute(_SELECT, [digests])
        found = dict(cursor.fetchall())
        missing = [d for d in digests if d not in found]
        if missing:
            cursor.execute(_INSERT, [missing, *([_text(specs[d][f]) for d in missing] for f in SPEC_FIELDS)])
            found.update(cursor.fetchall())
            late = [d for d in missing if d not in found]
            if late:  # inserted by a transaction that committed while ours waited on the digest
                cursor.execute(_SELECT, [late])
                found.update(cursor.fetchall())
    return found


def attach_specs(tasks: Iterable[Task]) -> None:
    """Point each Task with unsaved spec values (or no spec: the default one) at its TaskSpec,
    inserted when new."""
    tasks = [t for t in tasks if t._spec_values is not None or t.spec_id is None]
    by_digest: dict[str, dict[str, Any]] = {}
    digests = []
    for task in tasks:
        values = task._spec_values if task._spec_values is not None else dict(SPEC_DEFAULTS)
        digest = spec_digest(values)
        by_digest.setdefault(digest, values)
        digests.append(digest)
    ids = spec_ids(by_digest)
    for task, digest in zip(tasks, digests, strict=True):
        task.spec_id = ids[digest]
        task._spec_values = None


def spec_id_for(**values: Any) -> int:
    """The TaskSpec id of the given spec fields (the others default), inserted when new."""
    full = spec_values(values)
    digest = spec_digest(full)
    return spec_ids({digest: full})[digest]


def prune_task_specs(ids: Iterable[int] | None = None) -> int:
    """Delete the specs no task refers to (only among `ids` when given: the specs of tasks just
    deleted); returns how many went. A submission that took one meanwhile holds it (spec_ids
    reads `FOR KEY SHARE`) and the foreign key refuses: nothing goes, the next pruning retries."""
    unused = TaskSpec.objects.filter(tasks__isnull=True)
    if ids is not None:
        ids = sorted(set(ids))
        if not ids:
            return 0
        unused = unused.filter(id__in=ids)
    try:
        with transaction.atomic():
            deleted, _ = unused.delete()
    except IntegrityError:
        return 0
    return deleted


def task_objects(job: Job, rows: list[dict[str, Any]]) -> list[Task]:
    """Task objects of inserted task rows (as insert_drafts returns them), job attached; tasks of
    one spec share one TaskSpec object."""
    out = []
    specs: dict[int, TaskSpec] = {}
    for row in rows:
        spec_id = row["spec_id"]
        spec = specs.get(spec_id)
        if spec is None:
            spec = specs[spec_id] = TaskSpec(id=spec_id, digest=row["spec_digest"], **spec_values(row))
            spec._state.adding, spec._state.db = False, connection.alias
        task = Task(job=job, spec=spec, **{k: v for k, v in row.items() if k not in _NOT_TASK_KEYS})
        task._state.adding, task._state.db = False, connection.alias
        out.append(task)
    return out


# Keys of an inserted task row that are no Task field (the spec's, spec_id set as `spec`).
_NOT_TASK_KEYS = frozenset({*SPEC_FIELDS, "spec_id", "spec_digest"})


def attach_spec_ids(rows: list[dict[str, Any]]) -> None:
    """Set `spec_id` and `spec_digest` of each task dict, storing the specs not stored yet: one
    TaskSpec row per distinct spec, however many replicas share it."""
    digest_of = DigestMemo()
    digests = []
    specs: dict[str, dict[str, Any]] = {}
    for row in rows:
        digest, values = digest_of(row)
        digests.append(digest)
        specs.setdefault(digest, values)
    ids = spec_ids(specs)
    for row, digest in zip(rows, digests, strict=True):
        row["spec_id"], row["spec_digest"] = ids[digest], digest

"""The database side of a submission (schedweb.core.job_submission): one read, one write.

`load_context(drafts, user=...)` reads in one statement what the drafts refer to (PostgreSQL;
other databases take a few ORM queries with the same answers), `resolve(draft, ctx)` checks the
draft against it, and `insert_drafts(drafts)` writes all jobs and their tasks in one statement
and returns them built in memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from schedweb.core.default_queue import default_queue_name, ensure_default_queue
from schedweb.core.job_submission import JobDraft, JobExists
from schedweb.core.models import (
    ROOT_QUEUE_NAME,
    TERMINAL_JOB_PHASES,
    Job,
    Node,
    PriorityClass,
    Queue,
    QueueState,
    SchedulerConfig,
    Task,
)
from schedweb.core.queue_locks import lock_queues, raise_if_split
from schedweb.core.task_specs import attach_spec_ids, task_objects
from schedweb.core.validation import fail


@dataclass(frozen=True, slots=True)
class QueueRef:
    """A queue a submission names: where it sits, whether it takes jobs, the user's rights."""

    id: int
    name: str
    state: str
    parent_id: int | None
    leaf: bool
    can_admin: bool
    can_submit: bool


@dataclass
class SubmitContext:
    """What a set of drafts refers to, read in one round trip."""

    queues: dict[str, QueueRef] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    default_pc: PriorityClass | None = None
    taken: set[tuple[str, str]] = field(default_factory=set)
    # Idempotency-Key -> (job id, body hash, namespace, name) of the user's earlier submission.
    keys: dict[str, tuple[int, str, str, str]] = field(default_factory=dict)
    fingerprint: str = ""  # node-side data version (nodes, queues, active config), when asked


def queue_name_of(value: Any) -> str | None:
    """The queue name a draft's `queue` stands for (None/"" = the default queue); None when it
    is not a name at all."""
    if isinstance(value, Queue):
        return value.name
    if value is None or value == "":
        return default_queue_name()
    return value if isinstance(value, str) else None


def _m2m(model: type, name: str) -> tuple[str, str, str]:
    f = model._meta.get_field(name)
    return f.remote_field.through._meta.db_table, f.m2m_column_name(), f.m2m_reverse_name()


def _context_sql(with_fingerprint: bool) -> str:
    qn = connection.ops.quote_name
    q, job, pc = qn(Queue._meta.db_table), qn(Job._meta.db_table), qn(PriorityClass._meta.db_table)
    groups_t, groups_user, groups_group = (qn(n) for n in _m2m(get_user_model(), "groups"))
    my_groups = f"(SELECT {groups_group} FROM {groups_t} WHERE {groups_user} = %(user)s)"

    def granted(users: str, groups: str) -> str:
        ut, uq, uu = (qn(n) for n in _m2m(Queue, users))
        gt, gq, gg = (qn(n) for n in _m2m(Queue, groups))
        return (f"bool_or(EXISTS (SELECT 1 FROM {ut} a WHERE a.{uq} = c.id AND a.{uu} = %(user)s) "
                f"OR EXISTS (SELECT 1 FROM {gt} g WHERE g.{gq} = c.id AND g.{gg} IN {my_groups}))")

    def newest(table: str) -> str:
        return f"(SELECT count(*)::text || '/' || coalesce(max(updated)::text, '') FROM {table})"

    fingerprint = "''"
    if with_fingerprint:
        conf = qn(SchedulerConfig._meta.db_table)
        active = f"coalesce((SELECT version::text || '/' || id::text FROM {conf} WHERE active), '')"
        fingerprint = f"{newest(qn(Node._meta.db_table))} || ';' || {newest(q)} || ';' || {active}"
    leaf = (f"SELECT q.id, q.name, q.state, q.parent_id, EXISTS (SELECT 1 FROM {q} k WHERE "
            f"k.parent_id = q.id) AS has_children FROM {q} q WHERE q.name = ANY(%(queues)s)")
    chain = (f"SELECT id, id, parent_id, 0 FROM leaf UNION ALL SELECT c.leaf_id, p.id, p.parent_id, "
             f"c.depth + 1 FROM chain c JOIN {q} p ON p.id = c.parent_id WHERE c.depth < 10000")
    acl = (f"SELECT c.leaf_id, {granted('admin_users', 'admin_groups')} AS can_admin, "
           f"{granted('submitter_users', 'submitter_groups')} AS can_submit FROM chain c GROUP BY c.leaf_id")
    queues = ("SELECT coalesce(json_agg(json_build_array(l.id, l.name, l.state, l.parent_id, l.has_children, "
              "coalesce(a.can_admin, false), coalesce(a.can_submit, false))), '[]'::json) "
              "FROM leaf l LEFT JOIN acl a ON a.leaf_id = l.id")
    classes = ("SELECT coalesce(json_agg(json_build_array(id, name, value, preemption_policy, "
               f"global_default)), '[]'::json) FROM {pc} WHERE name = ANY(%(pcs)s) OR global_default")
    taken = (f"SELECT coalesce(json_agg(json_build_array(namespace, name)), '[]'::json) FROM {job} "
             "WHERE (namespace, name) IN (SELECT * FROM unnest(%(ns)s::text[], %(names)s::text[]))")
    keys = ("SELECT coalesce(json_agg(json_build_array(idempotency_key, id, idempotency_hash, namespace, "
            f"name)), '[]'::json) FROM {job} WHERE submitted_by_id = %(user)s "
            "AND idempotency_key = ANY(%(keys)s)")
    return (f"WITH RECURSIVE leaf AS ({leaf}), chain(leaf_id, id, parent_id, depth) AS ({chain}), "
            f"acl AS ({acl}) SELECT ({queues}), ({classes}), ({taken}), ({keys}), {fingerprint}")


_SQL: dict[bool, str] = {}
PC_COLUMNS = ["id", "name", "value", "preemption_policy", "global_default"]
QUEUE_COLUMNS = ["id", "name", "state", "parent_id"]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def load_context(drafts: list[JobDraft], *, user: Any = None, keys: list[str] | tuple[str, ...] = (),
                 fingerprint: bool = False) -> SubmitContext:
    """Everything `drafts` refer to; `user`'s rights on their queues and idempotency `keys`."""
    # Only text that passed draft_job's checks reaches the query (PostgreSQL refuses NUL, UTF-8
    # cannot carry a lone surrogate: either would be a 500, not a field error).
    queues = sorted({n for d in drafts if "queue" not in d.problems.fields
                     and (n := queue_name_of(d.queue)) is not None})
    pcs = sorted({d.priority_class for d in drafts if "priority_class" not in d.problems.fields
                  and isinstance(d.priority_class, str) and d.priority_class})
    pairs = sorted({(d.namespace, d.name) for d in drafts
                    if isinstance(d.namespace, str) and isinstance(d.name, str)
                    and "namespace" not in d.problems.fields and "name" not in d.problems.fields})
    user_id = user.pk if user is not None and getattr(user, "is_authenticated", False) else None
    if connection.vendor != "postgresql":
        return _orm_context(queues, pcs, pairs, user_id, list(keys), fingerprint)
    sql = _SQL.get(fingerprint)
    if sql is None:
        sql = _SQL[fingerprint] = _context_sql(fingerprint)
    params = {"queues": queues, "pcs": pcs, "ns": [p[0] for p in pairs], "names": [p[1] for p in pairs],
              "user": user_id, "keys": sorted(set(keys))}
    connection.ensure_connection()
    # A server-side-binding cursor on Django's own connection, so PostgreSQL keeps the statement
    # prepared (settings: prepare_threshold): its planning cost as much as running it. Wrapped
    # as Django wraps its own cursors (error mapping, execute wrappers, query log), like the
    # token statement (schedweb.api.authentication).
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    with wrap(psycopg.Cursor(connection.connection)) as cursor:
        cursor.execute(sql, params)
        q_rows, pc_rows, taken, used, print_ = cursor.fetchone()
    ctx = SubmitContext(fingerprint=print_ or "")
    for qid, name, state, parent, children, admin, submit in _json(q_rows):
        ctx.queues[name] = QueueRef(qid, name, state, parent, not children, bool(admin), bool(submit))
    for pid, name, value, policy, default in _json(pc_rows):
        obj = PriorityClass.from_db(connection.alias, PC_COLUMNS, [pid, name, value, policy, default])
        if default:
            ctx.default_pc = obj
        ctx.priority_classes[name] = obj
    ctx.taken = {(ns, name) for ns, name in _json(taken)}
    ctx.keys = {key: (jid, digest, ns, name) for key, jid, digest, ns, name in _json(used)}
    return ctx


def _orm_context(queues: list[str], pcs: list[str], pairs: list[tuple[str, str]], user_id: int | None,
                 keys: list[str], fingerprint: bool) -> SubmitContext:
    """load_context on databases without the one-statement form (SQLite): the same answers."""
    ctx = SubmitContext()
    parents = dict(Queue.objects.values_list("id", "parent_id"))
    with_children = set(Queue.objects.filter(parent__isnull=False).values_list("parent_id", flat=True))
    admin: set[int] = set()
    submit: set[int] = set()
    if user_id is not None:
        groups = list(get_user_model().objects.filter(pk=user_id).values_list("groups", flat=True))
        groups = [g for g in groups if g is not None]
        admin = set(Queue.objects.filter(Q(admin_users=user_id) | Q(admin_groups__in=groups))
                    .values_list("id", flat=True))
        submit = set(Queue.objects.filter(Q(submitter_users=user_id) | Q(submitter_groups__in=groups))
                     .values_list("id", flat=True))

    def chain(qid: int | None) -> list[int]:
        out: list[int] = []
        while qid is not None and qid not in out:
            out.append(qid)
            qid = parents.get(qid)
        return out

    for q in Queue.objects.filter(name__in=queues):
        ids = chain(q.id)
        ctx.queues[q.name] = QueueRef(q.id, q.name, q.state, q.parent_id, q.id not in with_children,
                                      any(i in admin for i in ids), any(i in submit for i in ids))
    for pc in PriorityClass.objects.filter(Q(name__in=pcs) | Q(global_default=True)):
        ctx.priority_classes[pc.name] = pc
        if pc.global_default:
            ctx.default_pc = pc
    names = {n for _, n in pairs}
    ctx.taken = {(ns, n) for ns, n in Job.objects.filter(name__in=names).values_list("namespace", "name")
                 if (ns, n) in set(pairs)}
    if user_id is not None and keys:
        for key, jid, digest, ns, n in Job.objects.filter(submitted_by_id=user_id, idempotency_key__in=keys) \
                .values_list("idempotency_key", "id", "idempotency_hash", "namespace", "name"):
            ctx.keys[key] = (jid, digest, ns, n)
    if fingerprint:
        newest = [m.objects.order_by("-updated").values_list("updated", flat=True).first()
                  for m in (Node, Queue)]
        active = SchedulerConfig.objects.filter(active=True).values_list("version", "id").first()
        ctx.fingerprint = f"{Node.objects.count()}/{newest[0]};{len(parents)}/{newest[1]};{active}"
    return ctx


def resolve(draft: JobDraft, ctx: SubmitContext) -> QueueRef | None:
    """Check the draft against the database (queue: known, a leaf, open; priority class known;
    name free: JobExists); sets its queue and class objects. Returns the queue's ref."""
    p = draft.problems
    name = queue_name_of(draft.queue)
    if name is None:
        p.add(fail("queue", "Expected a queue name."))
        return None
    if "queue" in p.fields:
        return None  # not a name that can be looked up (draft_job said why)
    ref = ctx.queues.get(name)
    if ref is None and name == default_queue_name():
        made = ensure_default_queue()  # Volcano: jobs naming no queue go to "default", made on demand
        ref = ctx.queues[name] = QueueRef(made.id, made.name, made.state, made.parent_id,
                                          not made.children.exists(), False, False)
    if name == ROOT_QUEUE_NAME:
        pass  # refused by draft_job already
    elif ref is None:
        p.add(fail("queue", f"Unknown queue {name!r}."))
    elif not ref.leaf:
        p.add(fail("queue", f"Queue {name!r} has child queues; jobs go into leaf queues only."))
    elif ref.state != QueueState.OPEN:
        p.add(fail("queue", f"Queue {name!r} is {ref.state}; it accepts no new jobs."))
    if ref is not None:
        # The columns read here; any other is loaded on first access (a deferred field).
        draft.queue_obj = (draft.queue if isinstance(draft.queue, Queue) else Queue.from_db(
            connection.alias, QUEUE_COLUMNS, [ref.id, ref.name, ref.state, ref.parent_id]))
    pc = draft.priority_class
    if isinstance(pc, PriorityClass):
        draft.pc_obj = pc
    elif isinstance(pc, str) and pc:
        draft.pc_obj = ctx.priority_classes.get(pc)
        if draft.pc_obj is None and "priority_class" not in p.fields:
            p.add(fail("priority_class", f"Unknown priority class {pc!r}."))
    elif pc in (None, ""):
        draft.pc_obj = ctx.default_pc  # Kubernetes' admission: the globalDefault class
    else:
        p.add(fail("priority_class", "Expected a priority class name."))
    if (draft.namespace, draft.name) in ctx.taken:
        p.add(JobExists({"name": [f"Job {draft.namespace}/{draft.name} already exists."]}))
    return ref


JOB_FIELDS = [f for f in Job._meta.concrete_fields if not f.primary_key]
TASK_FIELDS = [f for f in Task._meta.concrete_fields if not f.primary_key and f.attname != "job_id"]


def build_jobs(drafts: list[JobDraft]) -> list[Job]:
    """Unsaved Job objects of resolved drafts (created / updated: now; tasks stay dicts)."""
    now = timezone.now()
    out = []
    for d in drafts:
        assert d.queue_obj is not None and d.ok, "insert resolved drafts without problems only"
        f = d.fields
        out.append(Job(namespace=d.namespace, name=d.name, queue=d.queue_obj, priority_class=d.pc_obj,
                       min_member=f["min_member"], min_task_member=f["min_task_member"],
                       min_resources=f["min_resources"], phase=f["phase"], preemptable=f["preemptable"],
                       sla_waiting_time=f["sla_waiting_time"], submitted_by=f["submitted_by"],
                       idempotency_key=f["idempotency_key"], idempotency_hash=f["idempotency_hash"],
                       passthrough=f["passthrough"], scheduler_name=f["scheduler_name"], created=now,
                       updated=now,
                       finished=now if f["phase"] in TERMINAL_JOB_PHASES else None))
    return out


def _insert_sql() -> str:
    qn = connection.ops.quote_name

    def cast(f: Any, json_as_text: bool = False) -> str:
        kind = f.db_type(connection).split("(")[0] + "[]"
        return f"text[]::{kind}" if json_as_text and f.get_internal_type() == "JSONField" else kind

    job_cols = ", ".join(qn(f.column) for f in JOB_FIELDS)
    job_args = ", ".join(f"%s::{cast(f)}" for f in JOB_FIELDS)
    task_cols = [qn(f.column) for f in TASK_FIELDS]
    task_args = ", ".join(f"%s::{cast(f, json_as_text=True)}" for f in TASK_FIELDS)
    alias = ", ".join(f"c{i}" for i in range(len(TASK_FIELDS)))
    job_t, task_t = qn(Job._meta.db_table), qn(Task._meta.db_table)
    # The leaf guard (schedweb.core.queue_locks.lock_queues): no job goes into a queue that has
    # children by now; this statement reads after the queues' lock was granted.
    queue_t = qn(Queue._meta.db_table)
    return (f"WITH j AS (INSERT INTO {job_t} ({job_cols}) SELECT * FROM unnest({job_args}) "
            f"WHERE NOT EXISTS (SELECT 1 FROM {queue_t} k WHERE k.parent_id = ANY(%s::bigint[])) "
            f"RETURNING id, namespace, name), "
            f"t AS (INSERT INTO {task_t} (job_id, {', '.join(task_cols)}) SELECT j.id, {alias} "
            f"FROM unnest(%s::text[], %s::text[], {task_args}) WITH ORDINALITY AS u(_ns, _jn, {alias}, _ord) "
            f"JOIN j ON j.namespace = u._ns AND j.name = u._jn ORDER BY u._ord RETURNING id, job_id, name) "
            f"SELECT t.id, t.job_id, j.namespace, j.name, t.name FROM t JOIN j ON j.id = t.job_id")


_INSERT: list[str] = []


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    if not value and isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value)


def _task_values(rows: list[dict[str, Any]], now: Any) -> list[list[Any]]:
    """One list per TASK_FIELDS column of the task dicts, in database form."""
    cols: list[list[Any]] = []
    for f in TASK_FIELDS:
        name = f.attname
        if name in ("created", "updated"):
            cols.append([now] * len(rows))
        elif name == "node_id":
            cols.append([r["node"].pk if r.get("node") is not None else None for r in rows])
        elif f.get_internal_type() == "JSONField":
            # As text, cast by the statement (JSON_TEXT_CAST): Django's Jsonb wrapper per value
            # cost a third of a large batch's insert. Empty containers are the common case.
            cols.append([_json_text(r[name]) for r in rows])
        else:
            cols.append([r[name] for r in rows])
    return cols


def insert_drafts(drafts: list[JobDraft]) -> list[tuple[Job, list[dict[str, Any]]]]:
    """Write the resolved drafts' jobs and tasks; returns each saved Job (id set) with its task
    rows (the checked dicts plus `id`, `created`, `updated`): nothing is read back, and no Task
    object is made (task_objects() makes them for the few a response shows).

    PostgreSQL: one insert statement for any number of jobs, after lock_queues, in one
    transaction (a savepoint of the caller's). A taken name or idempotency key raises
    IntegrityError (the caller's race handling); a queue deleted or split meanwhile QueueChanged.
    """
    if not drafts:
        return []
    with transaction.atomic(savepoint=False):
        postgres = connection.vendor == "postgresql"
        lock_queues(drafts, check_leaves=not postgres)  # PostgreSQL: the insert's own guard
        return _insert(drafts)


def _insert(drafts: list[JobDraft]) -> list[tuple[Job, list[dict[str, Any]]]]:
    jobs = build_jobs(drafts)
    now = jobs[0].created
    rows = [[{**t, "created": now, "updated": now} for t in d.tasks] for d in drafts]
    attach_spec_ids([r for task_rows in rows for r in task_rows])
    if connection.vendor != "postgresql":
        with transaction.atomic():
            for job, task_rows in zip(jobs, rows, strict=True):
                job.save(force_insert=True)
                made = Task.objects.bulk_create(task_objects(job, task_rows))
                for row, task in zip(task_rows, made, strict=True):
                    row["id"] = task.pk
        return list(zip(jobs, rows, strict=True))
    if not _INSERT:
        _INSERT.append(_insert_sql())
    job_cols = [[f.get_db_prep_save(getattr(job, f.attname), connection) for job in jobs] for f in JOB_FIELDS]
    flat = [r for task_rows in rows for r in task_rows]
    owners = [job for job, task_rows in zip(jobs, rows, strict=True) for _ in task_rows]
    # Server-side binding (as load_context): the arrays travel as parameters, not as SQL text that
    # the client-side cursor would quote value by value.
    wrap = connection.make_debug_cursor if connection.queries_logged else connection.make_cursor
    with wrap(psycopg.Cursor(connection.connection)) as cursor:
        queue_ids = sorted({job.queue_id for job in jobs})
        cursor.execute(_INSERT[0], [*job_cols, queue_ids, [j.namespace for j in owners],
                                    [j.name for j in owners], *_task_values(flat, now)])
        returned = cursor.fetchall()
    if not returned:  # every job has a task: the leaf guard refused them
        raise_if_split(drafts)
        raise RuntimeError("the job insert wrote nothing, yet every queue is a leaf")
    by_key = {(job.namespace, job.name): (job, {r["name"]: r for r in task_rows})
              for job, task_rows in zip(jobs, rows, strict=True)}
    for task_id, job_id, ns, name, task_name in returned:
        job, named = by_key[(ns, name)]
        job.pk = job_id
        named[task_name]["id"] = task_id
    for job in jobs:
        job._state.adding, job._state.db = False, connection.alias
    return list(zip(jobs, rows, strict=True))

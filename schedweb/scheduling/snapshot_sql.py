"""The load's SQL: one declaration per row kind gives both the SELECT and the row type.

Each `RowSpec` lists its columns once, as (field, SQL column, how it comes back); the SELECT list
and the row type (a namedtuple whose fields the adapter reads by name) are both generated from
it, per database vendor. JSON comes back as text (decoded once per distinct value by the
loader: tasks repeat theirs), timestamps the snapshot keeps as floats as Unix seconds computed by
the database, and a task's `updated` as the database's own text (compared back exactly by the
write phase). The incremental loader (schedweb.scheduling.incremental) runs the same statements
restricted to the rows that changed (`WHERE ... AND <key> = ANY(%s)`, PostgreSQL only).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from schedweb.core.models import UNSCHEDULED_JOB_PHASES, JobPhase, TaskStatus

# Tasks in these statuses hold (or are promised) room on a node: loaded even for finished jobs.
HOLDING_STATUSES = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
                    TaskStatus.RUNNING, TaskStatus.RELEASING)
# Finished and suspended jobs are never scheduled: loaded only while a task holds a node.
ACTIVE_PHASES = tuple(p for p in JobPhase.values if p not in UNSCHEDULED_JOB_PHASES)

# How a column comes back: as stored, JSON as text, a timestamp as Unix seconds, any value as text.
PLAIN, JSON, EPOCH, TEXT = "plain", "json", "epoch", "text"


def _in(values: Sequence[str]) -> str:
    # Constant enum values from the code (never user input): inlined so plans stay stable.
    return "(" + ", ".join("'" + str(v).replace("'", "''") + "'" for v in values) + ")"


def _expr(column: str, how: str, postgres: bool) -> str:
    if how in (JSON, TEXT):
        return f"({column})::text" if postgres else f"CAST({column} AS text)"
    if how == EPOCH:
        # SQLite keeps datetimes as text: julianday() reads it (as the ORM expressions did).
        return (f"date_part('epoch', {column})" if postgres
                else f"((julianday({column}) - 2440587.5) * 86400.0)")
    return column


@dataclass(frozen=True)
class RowSpec:
    """One statement of the load: table, scope, order and its columns (field, column, how)."""

    name: str
    source: str  # FROM ... (with joins)
    columns: tuple[tuple[str, str, str], ...]
    where: str = ""
    order: str = ""
    keys: dict[str, str] = field(default_factory=dict)  # restriction name -> column (`= ANY(%s)`)
    # FROM and WHERE of the restricted statements when they differ (a few rows: index lookups).
    restricted: tuple[str, str] | None = None
    row: Any = None  # the namedtuple type, set in __post_init__

    def __post_init__(self) -> None:
        row = namedtuple(f"{self.name.title().replace('_', '')}Row", [c[0] for c in self.columns])
        row.__doc__ = f"One row of the load's `{self.name}` statement (fields as declared in RowSpec)."
        object.__setattr__(self, "row", row)

    def sql(self, postgres: bool, by: str | None = None) -> str:
        """The SELECT for a vendor; `by` restricts it to `keys[by] = ANY(%s)` (PostgreSQL)."""
        cols = ", ".join(_expr(column, how, postgres) for _, column, how in self.columns)
        source, scope = self.restricted if by is not None and self.restricted else (self.source, self.where)
        where = [f"({scope})"] if scope else []
        if by is not None:
            where.append(f"{self.keys[by]} = ANY(%s)")
        text = f"SELECT {cols} FROM {source}"
        if where:
            text += " WHERE " + " AND ".join(where)
        return text + (f" ORDER BY {self.order}" if self.order else "")


_HOLDING, _TERMINAL, _ACTIVE = _in(HOLDING_STATUSES), _in(UNSCHEDULED_JOB_PHASES), _in(ACTIVE_PHASES)

PRIORITY_CLASSES = RowSpec("priority_classes", "core_priorityclass", (
    ("id", "id", PLAIN), ("name", "name", PLAIN), ("value", "value", PLAIN),
    ("preemption_policy", "preemption_policy", PLAIN)), order="name")
QUEUES = RowSpec("queues", "core_queue", (
    ("id", "id", PLAIN), ("name", "name", PLAIN), ("parent_id", "parent_id", PLAIN),
    ("weight", "weight", PLAIN), ("priority", "priority", PLAIN), ("state", "state", PLAIN),
    ("reclaimable", "reclaimable", PLAIN), ("capability", "capability", JSON),
    ("deserved", "deserved", JSON), ("guarantee", "guarantee", JSON),
    ("annotations", "annotations", JSON), ("created", "created", PLAIN)), order="name")
NODES = RowSpec("nodes", "core_node", (
    ("id", "id", PLAIN), ("name", "name", PLAIN), ("allocatable", "allocatable", JSON),
    ("labels", "labels", JSON), ("taints", "taints", JSON), ("unschedulable", "unschedulable", PLAIN),
    ("usage_cpu", "usage_cpu", PLAIN), ("usage_memory", "usage_memory", PLAIN),
    ("usage_updated", "usage_updated", PLAIN)), order="name", keys={"id": "id"})
QUOTAS = RowSpec("quotas", "core_namespacequota", (
    ("namespace", "namespace", PLAIN), ("hard", "hard", JSON)), order="namespace")
JOBS = RowSpec("jobs", "core_job", (
    ("id", "id", PLAIN), ("namespace", "namespace", PLAIN), ("name", "name", PLAIN),
    ("queue_id", "queue_id", PLAIN), ("min_member", "min_member", PLAIN),
    ("min_task_member", "min_task_member", JSON), ("min_resources", "min_resources", JSON),
    ("priority_class_id", "priority_class_id", PLAIN), ("phase", "phase", PLAIN),
    ("preemptable", "preemptable", PLAIN), ("sla_waiting_time", "sla_waiting_time", PLAIN),
    ("created", "created", EPOCH), ("reason_code", "reason_code", PLAIN),
    ("reason_message", "reason_message", PLAIN), ("reason_details", "reason_details", JSON),
    ("reason_since", "reason_since", PLAIN), ("scheduler_name", "scheduler_name", PLAIN)),
    # EXISTS per finished job (no index on status needed), not a hash of every holding task.
    where=(f"phase NOT IN {_TERMINAL} OR EXISTS (SELECT 1 FROM core_task t WHERE t.job_id = core_job.id "
           f"AND t.status IN {_HOLDING})"),
    order="created, id", keys={"id": "id"})
TASKS = RowSpec("tasks", "core_task t INNER JOIN core_job j ON t.job_id = j.id", (
    ("id", "t.id", PLAIN), ("name", "t.name", PLAIN), ("job_id", "t.job_id", PLAIN),
    ("role", "t.role", PLAIN), ("request", "t.request", JSON), ("status", "t.status", PLAIN),
    ("node_id", "t.node_id", PLAIN), ("priority", "t.priority", PLAIN), ("spec_id", "t.spec_id", PLAIN),
    ("preemption_policy", "t.preemption_policy", PLAIN), ("preemptable", "t.preemptable", PLAIN),
    ("duration", "t.duration", PLAIN), ("created", "t.created", EPOCH),
    ("started", "t.started", EPOCH), ("updated", "t.updated", TEXT)),
    where=f"(j.phase IN {_ACTIVE} AND t.status <> 'Failed') OR t.status IN {_HOLDING}",
    order="t.job_id, t.name", keys={"id": "t.id", "job": "t.job_id"},
    # A few tasks: their job's phase by primary key, never a hash of the whole job table.
    restricted=("core_task t", f"(t.status <> 'Failed' AND (SELECT j.phase FROM core_job j "
                               f"WHERE j.id = t.job_id) IN {_ACTIVE}) OR t.status IN {_HOLDING}"))

# The pod specs tasks refer to (immutable rows, core.TaskSpec): read by id, only those the loader
# has not decoded yet, so a template's spec crosses the wire once however many replicas have it.
TASK_SPECS = RowSpec("task_specs", "core_taskspec", (
    ("id", "id", PLAIN), ("node_selector", "node_selector", JSON), ("tolerations", "tolerations", JSON),
    ("affinity", "affinity", JSON), ("topology_spread_constraints", "topology_spread_constraints", JSON),
    ("labels", "labels", JSON)), keys={"id": "id"})

SPECS = {spec.name: spec for spec in (PRIORITY_CLASSES, QUEUES, NODES, QUOTAS, JOBS, TASKS, TASK_SPECS)}
PriorityClassRow, QueueRow, NodeRow, QuotaRow = (PRIORITY_CLASSES.row, QUEUES.row, NODES.row, QUOTAS.row)
JobRowTuple, TaskRow, TaskSpecRow = JOBS.row, TASKS.row, TASK_SPECS.row

_CACHE: dict[tuple[str, bool, str | None], str] = {}


def statement(name: str, by: str | None = None) -> str:
    """The SELECT of statement `name` for the current connection's vendor (built once)."""
    postgres = connection.vendor == "postgresql"
    key = (name, postgres, by)
    sql = _CACHE.get(key)
    if sql is None:
        sql = _CACHE[key] = SPECS[name].sql(postgres, by)
    return sql


def statements() -> dict[str, str]:
    """Every unrestricted statement of the load, by name (the benchmark re-runs them raw)."""
    return {name: statement(name) for name in SPECS}


def fetch_all(names: Sequence[str]) -> dict[str, list[Any]]:
    """Run the named statements on one cursor; rows as their declared namedtuples, by name."""
    out: dict[str, list[Any]] = {}
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(statement(name))
            out[name] = list(map(SPECS[name].row._make, cursor.fetchall()))
    return out


def fetch_by(name: str, by: str, keys: Sequence[int]) -> list[Any]:
    """Rows of statement `name` whose `by` key is in `keys` (PostgreSQL: one array parameter)."""
    if not keys:
        return []
    with connection.cursor() as cursor:
        cursor.execute(statement(name, by), [list(keys)])
        return list(map(SPECS[name].row._make, cursor.fetchall()))


def fetch_specs(ids: Sequence[int]) -> list[Any]:
    """The TaskSpec rows of `ids` (any vendor: PostgreSQL one array parameter, others IN lists)."""
    if not ids:
        return []
    if connection.vendor == "postgresql":
        return fetch_by("task_specs", "id", ids)
    out: list[Any] = []
    base = statement("task_specs")
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            cursor.execute(f"{base} WHERE id IN ({', '.join(['%s'] * len(chunk))})", chunk)
            out += map(TASK_SPECS.row._make, cursor.fetchall())
    return out

"""The load's SQL: one hand-written SELECT per table, plain tuples, per database vendor.

The columns are the fewest the snapshot needs, in the order `adapter.load_state` unpacks them.
JSON comes back as text (decoded once per distinct value by the loader: tasks repeat theirs),
timestamps the snapshot keeps as floats come back as Unix seconds computed by the database, and
a task's `updated` as the database's own text (compared back exactly by the write phase).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from schedweb.core.models import TERMINAL_JOB_PHASES, JobPhase, TaskStatus

# Tasks in these statuses hold (or are promised) room on a node: loaded even for finished jobs.
HOLDING_STATUSES = (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING, TaskStatus.BOUND,
                    TaskStatus.RUNNING, TaskStatus.RELEASING)
ACTIVE_PHASES = tuple(p for p in JobPhase.values if p not in TERMINAL_JOB_PHASES)


def _in(values: Sequence[str]) -> str:
    # Constant enum values from the code (never user input): inlined so plans stay stable.
    return "(" + ", ".join("'" + str(v).replace("'", "''") + "'" for v in values) + ")"


def _sql(postgres: bool) -> dict[str, str]:
    def text(col: str) -> str:
        return f"({col})::text" if postgres else f"CAST({col} AS text)"

    def epoch(col: str) -> str:
        # SQLite keeps datetimes as text: julianday() reads it (as the ORM expressions did).
        return (f"date_part('epoch', {col})" if postgres
                else f"((julianday({col}) - 2440587.5) * 86400.0)")

    holding, terminal, active = _in(HOLDING_STATUSES), _in(TERMINAL_JOB_PHASES), _in(ACTIVE_PHASES)
    return {
        "priority_classes": "SELECT id, name, value, preemption_policy FROM core_priorityclass ORDER BY name",
        "queues": (f"SELECT id, name, parent_id, weight, priority, state, reclaimable, {text('capability')}, "
                   f"{text('deserved')}, {text('guarantee')}, {text('annotations')}, created "
                   f"FROM core_queue ORDER BY name"),
        "nodes": (f"SELECT id, name, {text('allocatable')}, {text('labels')}, {text('taints')}, "
                  f"unschedulable, usage_cpu, usage_memory, usage_updated FROM core_node ORDER BY name"),
        "quotas": f"SELECT namespace, {text('hard')} FROM core_namespacequota ORDER BY namespace",
        "jobs": (f"SELECT id, namespace, name, queue_id, min_member, {text('min_task_member')}, "
                 f"{text('min_resources')}, priority_class_id, phase, preemptable, sla_waiting_time, "
                 f"{epoch('created')}, reason_code, reason_message, {text('reason_details')}, reason_since "
                 # EXISTS per finished job (index on job_id), not a hash of every holding task.
                 f"FROM core_job WHERE phase NOT IN {terminal} "
                 f"OR EXISTS (SELECT 1 FROM core_task t WHERE t.job_id = core_job.id "
                 f"AND t.status IN {holding}) "
                 f"ORDER BY created, id"),
        "tasks": (f"SELECT t.id, t.name, t.job_id, t.role, {text('t.request')}, t.status, t.node_id, "
                  f"t.priority, {text('t.node_selector')}, {text('t.tolerations')}, {text('t.affinity')}, "
                  f"t.preemption_policy, t.preemptable, {text('t.labels')}, t.duration, "
                  f"{epoch('t.created')}, {text('t.updated')} "
                  f"FROM core_task t INNER JOIN core_job j ON t.job_id = j.id "
                  f"WHERE (j.phase IN {active} AND t.status <> 'Failed') OR t.status IN {holding} "
                  f"ORDER BY t.job_id, t.name"),
    }


_CACHE: dict[bool, dict[str, str]] = {}


def statements() -> dict[str, str]:
    """The load's statements for the current connection's vendor (built once per vendor)."""
    postgres = connection.vendor == "postgresql"
    sql = _CACHE.get(postgres)
    if sql is None:
        sql = _CACHE[postgres] = _sql(postgres)
    return sql


def fetch_all(names: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Run the named statements on one cursor; rows as plain tuples, by statement name."""
    sql = statements()
    out: dict[str, list[tuple[Any, ...]]] = {}
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(sql[name])
            out[name] = cursor.fetchall()
    return out

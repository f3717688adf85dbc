"""Invariants of the stored cluster, checked after faults: human-readable violations, none = healthy.

`check_invariants()` reads the database (a handful of queries) and reports:
- nodes whose holding tasks request more than their allocatable in some dimension (or pods);
- queues whose allocated tasks (Allocated, Binding, Bound, Running, of every leaf under them)
  request more than their capability in a dimension it names;
- tasks in an unknown status, holding a node without one, waiting on a node, or alive in a job
  that has finished; jobs in an unknown phase;
- partial cycles. A cycle writes its decisions with `updated = CycleRun.started` and records its
  CycleRun last, all in one transaction, so a partial cycle shows as: a CycleRun that never got
  its timings (`duration_seconds` 0), a skipped or failed CycleRun with decisions, more tasks
  stamped with a cycle's start than the cycle recorded, or a Binding/Pipelined task stamped at a
  time when no cycle is recorded (its CycleRun row is missing).

All of it is read in one snapshot (REPEATABLE READ on PostgreSQL): checked while cycles run, the
CycleRun rows and the task rows must come from the same moment, or a cycle committing between
two of the queries looks like a partial one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Min

from schedweb.core.models import Job, JobPhase, Node, Queue, Task, TaskStatus
from schedweb.scheduling.adapter import HOLDING_STATUSES
from schedweb.scheduling.models import CycleRun

# Holding statuses split as Volcano's node accounting does: Releasing tasks still occupy the node,
# and a Pipelined task is promised the room they will free (future idle = idle + releasing).
OCCUPYING = frozenset(s for s in HOLDING_STATUSES if s != TaskStatus.PIPELINED)
PROMISED = frozenset(s for s in HOLDING_STATUSES if s != TaskStatus.RELEASING)
GROUPS = (("occupying", OCCUPYING), ("non-releasing and pipelined", PROMISED))
# What a task of a finished job may still be in (a cancelled job's tasks release their nodes).
ALLOWED_IN_FINISHED_JOB = {
    JobPhase.COMPLETED: frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED}),
    JobPhase.CANCELLED: frozenset({TaskStatus.RELEASING, TaskStatus.SUCCEEDED, TaskStatus.FAILED}),
}
# Statuses only the cycle writes when node agents report Running/Succeeded/Failed (as the simulated
# agent and the reliability tests do): a task in one of them must come from a recorded cycle.
CYCLE_STATUSES = (TaskStatus.BINDING, TaskStatus.PIPELINED)
EPSILON = 1e-6  # stored units are integers (milli-cpu, bytes): this only absorbs float sums


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def check_nodes() -> list[str]:
    """Nodes whose occupying tasks, or non-releasing plus pipelined ones, exceed their allocatable."""
    nodes = dict(Node.objects.values_list("id", "allocatable"))
    names = dict(Node.objects.values_list("id", "name"))
    sums: dict[tuple[int, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for node_id, status, request in Task.objects.filter(
            status__in=HOLDING_STATUSES, node__isnull=False).values_list("node_id", "status", "request"):
        for group, statuses in GROUPS:
            if status in statuses:
                totals = sums[(node_id, group)]
                totals["pods"] += 1
                for dim, amount in (request or {}).items():
                    if dim != "pods":
                        totals[dim] += float(amount)
    out = []
    order = {group: i for i, (group, _) in enumerate(GROUPS)}
    for (node_id, group), totals in sorted(sums.items(), key=lambda kv: (names[kv[0][0]], order[kv[0][1]])):
        alloc = nodes[node_id] or {}
        for dim in sorted(totals):
            if dim == "pods" and "pods" not in alloc:
                continue  # no pod limit declared
            limit = float(alloc.get(dim, 0))
            if totals[dim] > limit + EPSILON:
                out.append(f"node {names[node_id]}: {group} tasks request {dim} {_num(totals[dim])} "
                           f"> allocatable {_num(limit)}")
    return out


ALLOCATED = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING)


def check_queues() -> list[str]:
    """Queues whose allocation (their leaves' allocated tasks) exceeds their capability."""
    rows = list(Queue.objects.values_list("id", "name", "parent_id", "capability"))
    if not any(r[3] for r in rows):
        return []
    per_leaf: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    allocated = Task.objects.filter(status__in=ALLOCATED)
    for queue_id, request in allocated.values_list("job__queue_id", "request"):
        for dim, amount in (request or {}).items():
            per_leaf[queue_id][dim] += float(amount)
    parent = {r[0]: r[2] for r in rows}
    totals: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for leaf, sums in per_leaf.items():
        q: int | None = leaf
        while q is not None:  # every queue up the chain holds the leaf's allocation
            for dim, amount in sums.items():
                totals[q][dim] += amount
            q = parent.get(q)
    out = []
    for queue_id, name, _, capability in sorted(rows, key=lambda r: r[1]):
        for dim, limit in sorted((capability or {}).items()):
            used = totals[queue_id].get(dim, 0.0)
            if isinstance(limit, int | float) and used > float(limit) + EPSILON:
                out.append(f"queue {name}: allocated tasks request {dim} {_num(used)} "
                           f"> capability {_num(limit)}")
    return out


def check_tasks() -> list[str]:
    """Tasks in one valid status consistent with their node and job; jobs in a valid phase."""
    out = []
    phases = set(JobPhase.values)
    for ns, name, phase in Job.objects.exclude(phase__in=phases).values_list("namespace", "name", "phase"):
        out.append(f"job {ns}/{name}: unknown phase {phase!r}")
    holding = set(HOLDING_STATUSES)
    for ns, name, status, node, job_name, phase in Task.objects.values_list(
            "job__namespace", "name", "status", "node__name", "job__name", "job__phase").order_by(
            "job__namespace", "name"):
        uid = f"{ns}/{name}"
        if status not in TaskStatus.values:
            out.append(f"task {uid}: unknown status {status!r}")
        elif status in holding and node is None:
            out.append(f"task {uid}: {status} without a node")
        elif status == TaskStatus.PENDING and node is not None:
            out.append(f"task {uid}: Pending but on node {node}")
        allowed = ALLOWED_IN_FINISHED_JOB.get(phase)
        if allowed is not None and status in TaskStatus.values and status not in allowed:
            out.append(f"task {uid}: {status} in {phase} job {ns}/{job_name}")
    return out


def check_cycles(cycle_statuses: Iterable[str] = CYCLE_STATUSES) -> list[str]:
    """Partial cycles: unfinished CycleRuns, decisions of skipped/failed ones, unrecorded decisions."""
    out = []
    runs = list(CycleRun.objects.order_by("id").values_list(
        "id", "started", "skipped", "errors", "duration_seconds", "binds", "pipelined", "evictions"))
    recorded: dict[datetime, Counter] = defaultdict(Counter)
    for pk, started, skipped, errors, duration, binds, pipelined, evictions in runs:
        kind = "skipped" if skipped else "failed" if errors else ""
        decided = {TaskStatus.BINDING: binds, TaskStatus.PIPELINED: pipelined,
                   TaskStatus.RELEASING: evictions}
        if kind and any(decided.values()):
            out.append(f"cycle {pk}: {kind} but records {binds} binds, {pipelined} pipelined, "
                       f"{evictions} evictions")
        elif not kind and duration <= 0:
            out.append(f"cycle {pk}: never finished its write phase (no duration recorded)")
        if not kind:
            recorded[started].update(decided)
        else:
            recorded.setdefault(started, Counter())
    stamped = Task.objects.filter(status__in=(TaskStatus.BINDING, TaskStatus.PIPELINED, TaskStatus.RELEASING),
                                  updated__in=list(recorded)).values_list("updated", "status").annotate(
        n=Count("id")).order_by("updated", "status")
    first_ids = {started: pk for pk, started, *_ in reversed(runs)}
    for updated, status, n in stamped:
        if n > recorded[updated][status]:
            out.append(f"cycle {first_ids[updated]}: {n} tasks {status} at its start but it records "
                       f"{recorded[updated][status]}")
    oldest = CycleRun.objects.aggregate(t=Min("started"))["t"]
    orphans = Task.objects.filter(status__in=list(cycle_statuses)).exclude(updated__in=list(recorded))
    if oldest is not None:
        orphans = orphans.filter(updated__gte=oldest)  # older history may have been pruned
    rows = orphans.values_list("job__namespace", "name", "status", "updated").order_by(
        "job__namespace", "name")
    for ns, name, status, updated in rows:
        out.append(f"task {ns}/{name}: {status} since {updated.isoformat()}, when no cycle is recorded "
                   "(partial cycle)")
    return out


def check_invariants(*, cycle_statuses: Iterable[str] = CYCLE_STATUSES) -> list[str]:
    """Every violation found (nodes, queues, then tasks and jobs, then cycles); empty when all hold.

    `cycle_statuses`: statuses only the cycle writes; pass () when agents set Binding themselves.
    """
    if connection.in_atomic_block:  # the caller's transaction already fixes what is seen
        return check_nodes() + check_queues() + check_tasks() + check_cycles(cycle_statuses)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return check_nodes() + check_queues() + check_tasks() + check_cycles(cycle_statuses)


@dataclass(frozen=True)
class SubmissionCounts:
    """Stored jobs and tasks (and jobs carrying an Idempotency-Key) of a namespace."""

    jobs: int
    tasks: int
    keyed_jobs: int


def count_submissions(*, namespace: str | None = None, name_prefix: str = "") -> SubmissionCounts:
    """How many jobs/tasks are stored (optionally of one namespace, names starting with a prefix)."""
    jobs = Job.objects.all()
    if namespace is not None:
        jobs = jobs.filter(namespace=namespace)
    if name_prefix:
        jobs = jobs.filter(name__startswith=name_prefix)
    return SubmissionCounts(jobs=jobs.count(), tasks=Task.objects.filter(job__in=jobs).count(),
                            keyed_jobs=jobs.filter(idempotency_key__isnull=False).count())

"""Job submissions in three steps, one job or a thousand alike: check, resolve, insert.

1. `draft_job(...)` checks a submission in memory and collects *every* problem it finds (each
   top-level field, each task entry; a task entry reports its first problem), expands
   `replicas: N` entries into N tasks named as Volcano names pods (`<job>-<task>-<index>`), and
   needs no query (except for the node names an import may give).
2. `load_context(drafts, ...)` reads everything the drafts refer to in one round trip (PostgreSQL:
   one statement): their queues with leaf-ness, state and the user's submit / admin rights
   (inherited down the tree, as schedweb.api.permissions.QueueAccess), the priority classes named
   and the globalDefault one, the (namespace, name) pairs already taken, the user's idempotency
   keys already used, and a fingerprint of the node-side data (schedweb.scheduling.never_fits_check).
   `resolve(draft, ctx)` then adds the problems only the database can tell (unknown queue or
   class, not a leaf, closed, name taken: `JobExists`).
3. `insert_drafts(drafts)` writes every job and all their tasks in one statement (PostgreSQL: a
   data-modifying CTE over unnest() arrays; in autocommit it is its own transaction, so a single
   submission costs one write round trip), and returns the Job objects built in memory, tasks
   attached: nothing is read back.

Task names are unique per job (the constraint `task_job_name_unique`); the scheduler's task key
is "namespace/job/task" (schedweb.scheduling.adapter.task_key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from scheduler_core import shapes
from schedweb.core.models import (
    DEFAULT_SCHEDULER_NAME,
    NODE_BOUND_TASK_STATUSES,
    ROOT_QUEUE_NAME,
    TERMINAL_TASK_STATUSES,
    JobPhase,
    Node,
    PreemptionPolicy,
    PriorityClass,
    Queue,
    TaskStatus,
)
from schedweb.core.validation import (
    check_affinity,
    check_choice,
    check_int,
    check_name,
    check_namespace,
    check_object,
    check_pod_name,
    check_seconds,
    check_storable,
    check_string_map,
    check_task_entry_name,
    check_text,
    check_tolerations,
    check_topology_spread_constraints,
    fail,
    parse_resources,
)
from schedweb.core.waiting_counts import waiting_counts

DEFAULT_POLICY = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
POD_NAME_MAX = shapes.MAX_POD_NAME  # a task's name, a replica's `<job>-<task>-<index>` too
# Django's `.values` builds a new list on every access: read once (checked per task).
TASK_STATUSES, POLICIES = tuple(TaskStatus.values), tuple(PreemptionPolicy.values)
JOB_PHASES = tuple(JobPhase.values)
TASK_KEYS = frozenset({"name", "role", "request", "priority", "preemption_policy", "preemptable",
                       "labels", "node_selector", "tolerations", "affinity", "topology_spread_constraints",
                       "duration", "status", "node", "replicas"})


class JobExists(ValidationError):  # noqa: N818 - a field error, named for what it says
    """The (namespace, name) is taken: the API answers 409 `conflict` (a ValidationError for
    the UI and other callers, naming `name`)."""


def max_tasks_per_job() -> int:
    """settings.MAX_TASKS_PER_JOB (env, default 10,000): bounded work per submission."""
    return int(getattr(settings, "MAX_TASKS_PER_JOB", 10_000))


# Admission (README "Input limits"): jobs that wait (unfinished, not yet running) per submitter
# and per queue. Each submission counts them in one statement (schedweb.core.waiting_counts: the
# submitter's capped at the limit on the (submitted_by, phase) index, each queue's grouped); the
# new jobs are checked against what is left.
# Submissions of one user racing each other may each see the same count: the bound then holds up
# to what the racing requests carry (each at most MAX_TASKS_PER_REQUEST tasks, MAX_JOBS_PER_BATCH
# jobs); the next submission sees them all and is refused.
WAITING_PHASES = (JobPhase.PENDING, JobPhase.INQUEUE)


def max_pending_jobs_per_user() -> int:
    """settings.MAX_PENDING_JOBS_PER_USER (env, default 1,000; 0 = no limit)."""
    return int(getattr(settings, "MAX_PENDING_JOBS_PER_USER", 1000))


def max_pending_jobs_per_queue() -> int:
    """settings.MAX_PENDING_JOBS_PER_QUEUE (env, default 3,000; 0 = no limit)."""
    return int(getattr(settings, "MAX_PENDING_JOBS_PER_QUEUE", 3000))


@dataclass(frozen=True)
class PendingLimit:
    """A waiting-jobs limit a submission would pass: whose (`user` or `queue` and its name)."""

    scope: str
    name: str
    limit: int
    setting: str

    @property
    def message(self) -> str:
        """What the refusal says, naming the limit and its setting."""
        whose = f"user {self.name}" if self.scope == "user" else f"queue {self.name}"
        return (f"{whose} already has {self.limit} waiting jobs (Pending or Inqueue), the most allowed "
                f"({self.setting}); submit more when some have started or finished.")


class PendingBudget:
    """What is left under the waiting-jobs limits for one submission's new jobs, in request order."""

    def __init__(self, user: Any, queues: dict[int, str]) -> None:
        self.user_limit, self.queue_limit = max_pending_jobs_per_user(), max_pending_jobs_per_queue()
        self.user = user if getattr(user, "pk", None) is not None else None
        self.queue_names = queues
        counted = self.user is not None and self.user_limit > 0
        asked = list(queues) if self.queue_limit > 0 else []
        counts = waiting_counts(user_id=self.user.pk if counted else None, user_cap=self.user_limit,
                                queue_ids=asked)  # one statement (none when neither is limited)
        self.user_left: int | None = self.user_limit - counts.user if counted else None
        self.queue_left: dict[int, int] = {q: self.queue_limit - counts.queues[q] for q in asked}

    def take(self, queue_id: int | None, phase: str) -> PendingLimit | None:
        """Count one new job of `queue_id` in `phase`; the limit it would pass (nothing counted)."""
        if phase not in WAITING_PHASES:
            return None
        if self.user_left is not None and self.user_left <= 0:
            return PendingLimit("user", self.user.get_username(), self.user_limit,
                                "MAX_PENDING_JOBS_PER_USER")
        left = self.queue_left.get(queue_id) if queue_id is not None else None
        if left is not None and left <= 0:
            return PendingLimit("queue", self.queue_names[queue_id], self.queue_limit,
                                "MAX_PENDING_JOBS_PER_QUEUE")
        if self.user_left is not None:
            self.user_left -= 1
        if left is not None:
            self.queue_left[queue_id] = left - 1
        return None


class Problems:
    """Field errors collected from independent checks ({path: [messages]}, first seen first)."""

    def __init__(self) -> None:
        self.fields: dict[str, list[str]] = {}
        self._other = False  # a problem other than JobExists was found

    @property
    def conflict(self) -> bool:
        """The only problem is a taken name (the API's 409)."""
        return bool(self.fields) and not self._other

    def add(self, exc: ValidationError) -> None:
        """Keep every message of a service ValidationError under its path."""
        self._other = self._other or not isinstance(exc, JobExists)
        items = (exc.message_dict.items() if hasattr(exc, "error_dict")
                 else [("non_field_errors", exc.messages)])
        for path, messages in items:
            self.fields.setdefault(path, []).extend(m for m in messages if m not in self.fields.get(path, []))

    def check(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), or None with its ValidationError kept."""
        try:
            return fn(*args, **kwargs)
        except ValidationError as exc:
            self.add(exc)
            return None

    def error(self) -> ValidationError:
        """All of them as one ValidationError (JobExists when the taken name is the only one)."""
        cls = JobExists if self.conflict else ValidationError
        return cls({k: list(v) for k, v in self.fields.items()})


def task_name_check(raw: Any) -> Any:
    """The check of a task entry's name: a pod name (subdomain, 63 at most) for a task, a DNS
    label (Volcano's task name) for an entry with `replicas`, whose pods are `<job>-<name>-<i>`."""
    replicated = isinstance(raw, dict) and raw.get("replicas") is not None
    return check_task_entry_name if replicated else check_pod_name


def check_task(raw: Any, i: int, nodes: dict[str, Node]) -> dict[str, Any]:
    """One task dict, checked (the first problem is raised, named `tasks[i].<key>`); `replicas`
    is kept for draft_job to expand. Imports and the demo may give `status` and `node`."""
    where = f"tasks[{i}]"
    if not isinstance(raw, dict):
        raise fail(where, "Expected a task object.")
    unknown = sorted(set(raw) - TASK_KEYS, key=str)
    if unknown:
        check_text(str(unknown[0]), where, max_length=253)
        raise fail(f"{where}.{unknown[0]}", "Unknown field.")
    check_storable(raw, where)
    status = check_choice(raw.get("status", TaskStatus.PENDING), f"{where}.status", TASK_STATUSES)
    node = raw.get("node")
    if isinstance(node, Node):
        node = node.name
    if node is not None:
        if node not in nodes:
            check_text(node, f"{where}.node", max_length=253)
            found = Node.objects.filter(name=node).first()
            if found is None:
                raise fail(f"{where}.node", f"Unknown node {node!r}.")
            nodes[node] = found
        if status == TaskStatus.PENDING:
            raise fail(f"{where}.node", "A Pending task is not on a node.")
    elif status in NODE_BOUND_TASK_STATUSES:
        raise fail(f"{where}.node", f"A {status} task needs a node.")
    replicas = raw.get("replicas")
    if replicas is not None:
        check_int(replicas, f"{where}.replicas", minimum=0)
    now = timezone.now()
    return {
        "name": task_name_check(raw)(raw.get("name"), f"{where}.name"),
        "role": check_text(raw.get("role"), f"{where}.role", max_length=63),
        "request": parse_resources(raw.get("request") or {}, f"{where}.request", pod=True),
        "priority": check_int(raw.get("priority"), f"{where}.priority", nullable=True),
        "preemption_policy": check_choice(raw.get("preemption_policy", DEFAULT_POLICY),
                                          f"{where}.preemption_policy", POLICIES),
        "preemptable": bool(raw.get("preemptable", True)),
        "labels": check_string_map(raw.get("labels"), f"{where}.labels"),
        "node_selector": check_string_map(raw.get("node_selector"), f"{where}.node_selector"),
        "tolerations": check_tolerations(raw.get("tolerations"), f"{where}.tolerations"),
        "affinity": check_affinity(raw.get("affinity"), f"{where}.affinity"),
        "topology_spread_constraints": check_topology_spread_constraints(
            raw.get("topology_spread_constraints"), f"{where}.topology_spread_constraints"),
        "duration": check_seconds(raw.get("duration"), f"{where}.duration"),
        "status": status,
        "node": nodes[node] if node is not None else None,
        "started": now if status in (TaskStatus.RUNNING, *TERMINAL_TASK_STATUSES) else None,
        "finished": now if status in TERMINAL_TASK_STATUSES else None,
        "replicas": replicas,
    }


def expand_replicas(job_name: str, entries: list[tuple[int, dict[str, Any]]], problems: Problems,
                    check_names: bool = True) -> list[tuple[int, dict[str, Any]]]:
    """(entry index, task) pairs: an entry with `replicas: N` stands for N tasks named
    `<job>-<task>-<index>` (index from 0; its role defaults to the entry's name, as Volcano's
    task name is the pods' role); the others stand for themselves."""
    out: list[tuple[int, dict[str, Any]]] = []
    for i, entry in entries:
        n = entry.pop("replicas")
        if n is None:
            out.append((i, entry))
            continue
        base = f"{job_name}-{entry['name']}"
        longest = shapes.pod_name(job_name, entry["name"], max(n - 1, 0))
        if check_names and len(longest) > POD_NAME_MAX:  # named once, at the entry
            problems.add(fail(f"tasks[{i}].name", f"Its replicas would be named {base}-<index>, up to "
                                                  f"{len(longest)} characters; a pod name has at most "
                                                  f"{POD_NAME_MAX}."))
            continue
        role = entry["role"] or entry["name"]
        out.extend((i, {**entry, "name": f"{base}-{k}", "role": role}) for k in range(n))
    return out


def check_job_shape(tasks: list[dict[str, Any]], min_member: Any, min_task_member: Any) -> dict[str, int]:
    """min_member and min_task_member against the (expanded) tasks; the role minimums to store."""
    check_int(min_member, "min_member", minimum=0)
    if min_member > len(tasks):
        raise fail("min_member", f"min_member {min_member} is above the task count {len(tasks)}.")
    roles: dict[str, int] = {}
    for task in tasks:
        roles[task["role"]] = roles.get(task["role"], 0) + 1
    if min_task_member is None:
        return {}
    if not isinstance(min_task_member, dict):
        raise fail("min_task_member", "Expected an object of role -> minimum task count.")
    check_storable(min_task_member, "min_task_member")
    for role, n in min_task_member.items():
        check_int(n, "min_task_member", minimum=0)
        if n > roles.get(role, 0):
            raise fail("min_task_member", f"Role {role!r} needs {n} task(s) but the job has "
                                          f"{roles.get(role, 0)}.")
    return dict(min_task_member)


def _checked_entries(tasks: list[Any], p: Problems) -> list[tuple[int, dict[str, Any]]]:
    """(index, checked task) of the entries that pass check_task. Entries equal but for their name
    (a job's workers, as portals list them) are checked once; each name still is."""
    nodes: dict[str, Node] = {}
    seen: dict[str, dict[str, Any]] = {}
    out = []
    for i, raw in enumerate(tasks):
        key = None
        if isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw.get("node") is None:
            key = repr({k: v for k, v in raw.items() if k != "name"})  # equal reprs: equal values
        done = seen.get(key) if key is not None else None
        if done is not None and p.check(task_name_check(raw), raw["name"], f"tasks[{i}].name") is not None:
            out.append((i, {**done, "name": raw["name"]}))
            continue
        checked = p.check(check_task, raw, i, nodes)
        if checked is not None:
            out.append((i, checked))
            if key is not None:
                seen[key] = checked
    return out


@dataclass
class JobDraft:
    """One submission, checked in memory: the job's fields, its expanded tasks, its problems."""

    namespace: str
    name: str
    queue: Any                      # name, Queue, or None (the default queue)
    priority_class: Any             # name, PriorityClass, or None (the globalDefault class)
    fields: dict[str, Any]          # the other Job columns
    tasks: list[dict[str, Any]]
    problems: Problems
    queue_obj: Queue | None = None  # set by resolve()
    pc_obj: PriorityClass | None = None

    @property
    def ok(self) -> bool:
        """No problem found so far."""
        return not self.problems.fields


def draft_job(*, namespace: Any, name: Any, queue: Any = None, tasks: Any, min_member: Any = 1,
              min_task_member: Any = None, min_resources: Any = None, priority_class: Any = None,
              preemptable: Any = True, sla_waiting_time: Any = None, submitted_by: Any = None,
              idempotency_key: str | None = None, idempotency_hash: str = "", phase: str = JobPhase.PENDING,
              passthrough: Any = None, scheduler_name: Any = DEFAULT_SCHEDULER_NAME) -> JobDraft:
    """Check a submission (see job_services.job_submit for the fields); every problem is kept."""
    p = Problems()
    p.check(check_namespace, namespace)
    p.check(check_name, name)
    if isinstance(queue, str):
        if queue == ROOT_QUEUE_NAME:
            p.add(fail("queue", f'"{ROOT_QUEUE_NAME}" is the implicit root queue; jobs go into leaf '
                                "queues only."))
        else:
            p.check(check_text, queue, "queue", max_length=253)
    if isinstance(priority_class, str):
        p.check(check_text, priority_class, "priority_class", max_length=253)
    if idempotency_key is not None:
        p.check(check_text, idempotency_key, "Idempotency-Key", max_length=255)
    p.check(check_choice, phase, "phase", JOB_PHASES)
    fields: dict[str, Any] = {
        "min_resources": p.check(parse_resources, min_resources, "min_resources"),
        "sla_waiting_time": p.check(check_seconds, sla_waiting_time, "sla_waiting_time"),
        "preemptable": bool(preemptable), "phase": phase, "submitted_by": submitted_by,
        "idempotency_key": idempotency_key or None,
        "idempotency_hash": (idempotency_hash or "") if idempotency_key else "",
        "passthrough": p.check(check_object, passthrough, "passthrough") or {},
        "scheduler_name": p.check(check_name, scheduler_name, "scheduler_name"),
    }
    draft = JobDraft(namespace, name, queue, priority_class, fields, [], p)
    if not isinstance(tasks, list) or not tasks:
        p.add(fail("tasks", "A job needs at least one task."))
        return draft
    limit, total = max_tasks_per_job(), 0
    for raw in tasks:
        n = raw.get("replicas") if isinstance(raw, dict) else None
        total += n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
    if total > limit:  # before any task is checked or made
        p.add(fail("tasks", f"A job may have at most {limit} tasks (MAX_TASKS_PER_JOB), got {total}."))
        return draft
    p.check(check_int, min_member, "min_member", minimum=0)
    entries = _checked_entries(tasks, p)
    named = isinstance(name, str) and "name" not in p.fields  # else pod names would repeat its error
    expanded = expand_replicas(name if named else "", entries, p, check_names=named)
    first: dict[str, int] = {}  # one pass: jobs have 10k tasks
    for i, task in expanded:
        seen = first.setdefault(task["name"], i)
        if seen != i:  # replicas of one entry never collide: two entries do
            p.add(fail(f"tasks[{i}].name", f"Duplicate task name {task['name']!r} (also tasks[{seen}])."))
    if not expanded and not p.fields:
        p.add(fail("tasks", "A job needs at least one task."))
    draft.tasks = [t for _, t in expanded]
    if p.fields:
        return draft
    fields["min_member"] = min_member
    fields["min_task_member"] = p.check(check_job_shape, draft.tasks, min_member, min_task_member)
    return draft

"""Preview of a queue change: what the next cycle would do with it, before it is saved.

`preview_queue_change(queue, apply)` loads the cluster once, then runs `apply()` (the real edit,
e.g. schedweb.api.commands.queue_update: the services' checks and limits,
schedweb.core.queue_limits) in a savepoint that is always rolled back, reading the queue rows it
left behind first. Two sessions of the active configuration then run in memory on copies of
the one load: *before* on the queues as stored, *after* on the queues as changed. Nothing is
written: no queue row, audit entry or change log row outlives the savepoint.

The answer (the API's `POST /api/v1/queues/{name}/preview/`):
- `valid`, `violations` ({field: [message]}: what the services refuse, limits included; then
  nothing else is computed: `changes` is {} and `queues` / `jobs` are empty);
- `changes`: the queue's settings that differ, {field: {"before", "after"}} (resources in API
  units, cpu in cores, memory in bytes);
- `queues`: the queue, its siblings and their ancestors (before and after a move), then any other
  queue whose figures moved: `{name, parent, role: ancestor|queue|sibling|other, changed,
  before, after}` where before / after are the session's figures (`deserved`,
  `real_capability`, `allocated`, `capability`, `guarantee` in API units, `weight`, `share`,
  `overused`), None when the queue plugin reports none for it (proportion: queues without jobs);
- `losses`: who would lose what: every other queue whose deserved or real capability shrinks,
  one entry per figure and dimension `{queue, role, figure, dim, before, after}` (API units;
  None = unlimited), largest cut first;
- `warnings`: what the change leaves in place that the hierarchy limits do not refuse: the
  top-level queues' guarantees added up above the cluster's current size (the top level is the
  cluster, whose size changes, so it is never refused: schedweb.core.queue_limits);
- `jobs`: the decisions of the next cycle that differ, by task (a task bound either way is left
  out, whatever its node): `starting` (tasks bound only after the change, {task: node}),
  `not_starting` (bound only before, {task: node before}), `losing` (tasks evicted only after, a
  list of task names: reclaim), `not_losing`; each entry `{job, id, queue, tasks}`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from scheduler_core.forecast import clone_snapshot
from scheduler_core.model import ClusterSnapshot, QueueInfo
from scheduler_core.resources import Resource
from scheduler_core.result import QueueFigures, SessionResult
from scheduler_core.scheduler import run_session_isolated
from schedweb.audit.diff import diff
from schedweb.core.models import Queue
from schedweb.core.queue_limits import amount as stored_amount
from schedweb.core.snapshots import queue_snapshot
from schedweb.core.validation import resources_for_input
from schedweb.scheduling.adapter import load_state, queues_of
from schedweb.scheduling.cycle import active_conf, with_rescheduling_last_run
from schedweb.scheduling.snapshot_sql import fetch_all

ROOT = "root"
RESOURCE_FIGURES = ("deserved", "real_capability", "allocated", "capability", "guarantee")
RESOURCE_SETTINGS = ("capability", "deserved", "guarantee")


def _api(value: Resource | dict | None) -> dict[str, Any] | None:
    """A resource in API units, without dimensions that are not finite (unlimited)."""
    if value is None:
        return None
    stored = value.to_canonical() if isinstance(value, Resource) else value
    return resources_for_input({k: v for k, v in stored.items() if math.isfinite(float(v))})


def figures(fig: QueueFigures | None) -> dict[str, Any] | None:
    """One queue's session figures as JSON (see the module docstring)."""
    if fig is None:
        return None
    out: dict[str, Any] = {name: _api(getattr(fig, name)) for name in RESOURCE_FIGURES}
    share = float(fig.share)
    out.update(weight=fig.weight, share=round(share, 6) if math.isfinite(share) else None,
               overused=bool(fig.overused))
    return out


def with_queues(base: ClusterSnapshot, queues: list[QueueInfo], renamed: dict[str, str]) -> ClusterSnapshot:
    """A copy of `base` with another queue tree (wired as ClusterSnapshot.build wires it) and
    jobs of renamed queues following their queue."""
    snap = clone_snapshot(base)
    snap.queues = {q.name: q for q in queues}
    if ROOT not in snap.queues:
        snap.queues[ROOT] = QueueInfo(name=ROOT, parent=None)
    for q in snap.queues.values():
        q.children = []
    for q in sorted(snap.queues.values(), key=lambda q: q.name):
        if q.name == ROOT:
            q.parent = None
            continue
        q.parent = q.parent or ROOT
        snap.queues[q.parent].children.append(q.name)
    for job in snap.jobs.values():
        job.queue = renamed.get(job.queue, job.queue)
    return snap


def _chain(snap: ClusterSnapshot, name: str | None) -> list[str]:
    """Ancestors of `name`, top-level first (root left out)."""
    out: list[str] = []
    q = snap.queues.get(name) if name else None
    while q is not None and q.parent and q.parent != ROOT and q.parent not in out:
        out.append(q.parent)
        q = snap.queues.get(q.parent)
    return out[::-1]


def _roles(before: ClusterSnapshot, after: ClusterSnapshot, old: str, new: str) -> dict[str, str]:
    roles: dict[str, str] = {}
    for snap, name in ((before, old), (after, new)):
        for anc in _chain(snap, name):
            roles.setdefault(anc, "ancestor")
    roles[new] = "queue"
    for snap, name in ((before, old), (after, new)):
        queue = snap.queues.get(name)
        parent = snap.queues.get(queue.parent) if queue is not None and queue.parent else None
        for sibling in sorted(parent.children if parent is not None else ()):
            if sibling not in (old, new):
                roles.setdefault(sibling, "sibling")
    return roles


def _queue_rows(before: ClusterSnapshot, after: ClusterSnapshot, old: str, new: str,
                res_b: SessionResult, res_a: SessionResult) -> list[dict[str, Any]]:
    roles = _roles(before, after, old, new)
    names = (set(before.queues) - {old}) | set(after.queues)  # a renamed queue is one row, its new name
    rows = []
    for name in names - {ROOT}:
        fig_b = figures(res_b.queues.get(old if name == new else name))
        fig_a = figures(res_a.queues.get(name))
        role = roles.get(name)
        if role is None and fig_a == fig_b:
            continue
        queue = after.queues.get(name) or before.queues.get(name)
        parent = queue.parent if queue is not None and queue.parent != ROOT else None
        rows.append({"name": name, "parent": parent, "role": role or "other", "changed": fig_a != fig_b,
                     "before": fig_b, "after": fig_a})
    order = {"ancestor": 0, "queue": 1, "sibling": 2, "other": 3}
    ancestors = _chain(after, new)
    return sorted(rows, key=lambda r: (order[r["role"]], ancestors.index(r["name"]) if r["name"] in ancestors
                                       else 0, r["name"]))


def _dim_value(figure: str, dim: str, figs: dict[str, Any]) -> float:
    """One dimension of a row's figure (API units); a missing one is unlimited for the real
    capability and for cpu/memory (the answer drops unlimited dimensions), else none of it."""
    value = (figs.get(figure) or {}).get(dim)
    if value is None:
        return math.inf if figure == "real_capability" or dim in ("cpu", "memory") else 0.0
    return float(value)


def losses(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Who would lose what (see the module docstring), from the answer's `queues` rows."""
    out = []
    for row in rows:
        before, after = row["before"], row["after"]
        if row["role"] == "queue" or before is None or after is None:
            continue
        for figure in ("deserved", "real_capability"):
            dims = set(before.get(figure) or {}) | set(after.get(figure) or {}) | {"cpu", "memory"}
            for dim in sorted(dims, key=lambda d: (d not in ("cpu", "memory"), d)):
                b, a = _dim_value(figure, dim, before), _dim_value(figure, dim, after)
                if a < b - 1e-9:
                    out.append({"queue": row["name"], "role": row["role"], "figure": figure, "dim": dim,
                                "before": None if math.isinf(b) else b, "after": a})
    return sorted(out, key=lambda e: (-(math.inf if e["before"] is None else e["before"] - e["after"]),
                                      e["queue"], e["figure"], e["dim"]))


def top_level_warnings(snap: ClusterSnapshot) -> list[str]:
    """The top-level guarantees summed above the cluster's allocatable, per dimension."""
    total, promised = Resource.empty(), Resource.empty()
    for node in snap.nodes.values():
        total.add(node.allocatable)
    for queue in snap.queues.values():
        if queue.parent in (None, ROOT) and queue.name != ROOT and queue.guarantee is not None:
            promised.add(queue.guarantee)
    have, want = total.to_canonical(), promised.to_canonical()
    out = []
    for dim, amount in want.items():
        if amount > have.get(dim, 0.0) + 0.1:
            out.append(f"The top-level queues' guarantees add up to {dim} {stored_amount(dim, amount)}, "
                       f"above the cluster's {stored_amount(dim, have.get(dim, 0.0))} now: each top-level "
                       "queue gets its guarantee at most (nothing left to borrow) and not every "
                       "guarantee can be met at once.")
    return out


def _job_changes(base: ClusterSnapshot, job_ids: dict[str, int], renamed: dict[str, str],
                 res_b: SessionResult, res_a: SessionResult) -> dict[str, list[dict[str, Any]]]:
    tasks = {t.uid: (job.uid, t.name) for job in base.jobs.values() for t in job.tasks.values()}

    def group(decided: dict[str, str | None], with_nodes: bool) -> list[dict[str, Any]]:
        jobs: dict[str, dict[str, Any]] = {}
        for task_uid in sorted(decided):
            if task_uid not in tasks:
                continue
            job_uid, task_name = tasks[task_uid]
            queue = base.jobs[job_uid].queue
            entry = jobs.setdefault(job_uid, {"job": job_uid, "id": job_ids.get(job_uid),
                                              "queue": renamed.get(queue, queue),
                                              "tasks": {} if with_nodes else []})
            if with_nodes:
                entry["tasks"][task_name] = decided[task_uid]
            else:
                entry["tasks"].append(task_name)
        return [jobs[uid] for uid in sorted(jobs)]

    def only(mine: dict[str, str | None], other: dict[str, str | None]) -> dict[str, str | None]:
        # By task, not by (task, node): a task bound either way is no news, whatever its node.
        return {uid: node for uid, node in mine.items() if uid not in other}

    evict_b = dict.fromkeys(res_b.evictions)
    evict_a = dict.fromkeys(res_a.evictions)
    return {"starting": group(only(res_a.binds, res_b.binds), True),
            "not_starting": group(only(res_b.binds, res_a.binds), True),
            "losing": group(only(evict_a, evict_b), False),
            "not_losing": group(only(evict_b, evict_a), False)}


def _setting_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = diff(before, after)
    for name in RESOURCE_SETTINGS:
        if name in out:
            out[name] = {k: resources_for_input(v) for k, v in out[name].items()}
    return out


def preview_queue_change(queue: Queue, apply: Callable[[], Queue], *,
                         now: datetime | None = None) -> dict[str, Any]:
    """What `apply()` (a change of `queue`, raising ValidationError when refused) would do in the
    next cycle; nothing is written. Other exceptions of `apply` (PermissionDenied) propagate."""
    now = now or timezone.now()
    version, conf = active_conf()
    conf, _ = with_rescheduling_last_run(conf, now.timestamp())
    out: dict[str, Any] = {"queue": queue.name, "valid": True, "violations": {}, "config_version": version,
                           "computed_at": now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                           "changes": {}, "queues": [], "losses": [], "warnings": [],
                           "jobs": {"starting": [], "not_starting": [], "losing": [], "not_losing": []}}
    with transaction.atomic():
        settings_before = queue_snapshot(queue)
        state = load_state(now)
        try:
            with transaction.atomic():
                changed = apply()
                rows = fetch_all(["queues"])["queues"]
                settings_after = queue_snapshot(changed)
                transaction.set_rollback(True)
        except ValidationError as exc:
            out["valid"] = False
            out["violations"] = ({("non_field_errors" if k == "__all__" else k): list(v)
                                  for k, v in exc.message_dict.items()}
                                 if hasattr(exc, "error_dict") else {"non_field_errors": list(exc.messages)})
        transaction.set_rollback(True)
    if not out["valid"]:
        return out
    old, new = queue.name, settings_after["name"]
    out["queue"] = new
    out["changes"] = _setting_changes(settings_before, settings_after)
    renamed = {old: new} if new != old else {}
    base = state.snapshot
    after = with_queues(base, queues_of(rows)[0], renamed)
    _, res_a = run_session_isolated(lambda: clone_snapshot(after), conf)
    _, res_b = run_session_isolated(lambda: clone_snapshot(base), conf)
    out["queues"] = _queue_rows(base, after, old, new, res_b, res_a)
    out["losses"] = losses(out["queues"])
    out["warnings"] = top_level_warnings(after)
    out["jobs"] = _job_changes(base, {uid: row.id for uid, row in state.jobs.items()}, renamed, res_b, res_a)
    return out

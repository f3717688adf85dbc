"""NeverFits: jobs that cannot run as submitted, whatever else finishes (docs/semantics.md section 7).

Checked at session close by build_reasons for every valid job with unbound tasks whose gang is
not met, except jobs that got a task placed (allocated or pipelined) in this session. Only
facts that other jobs finishing cannot change are used: node allocatable (not idle), the
failures the enabled predicates declare as coming from node facts alone (`PredicateFacets.
node_facts`; the predicates plugin's unschedulable, selector / node affinity, taints; every node
when no predicate declares them), and the queue limits the active queue plugin enforces
(per level of its queue chain but the root, the per-dimension maximum of the QueueFigures the
plugin declares as its `ceiling_figures`: capacity's real capability on every level;
proportion's max(real capability, guarantee) for the job's own queue, since deserved never
exceeds either). Kinds, in the order they are tested:

- `NoNodeMatches`: too few tasks could ever hold a node for the gang (or a role minimum) and a
  task that cannot has no node passing the static predicates;
- `TaskLargerThanAnyNode`: the same, but nodes match and none has the allocatable for one task;
- `GangExceedsQueueLimit`: the gang's minimum (per dimension the smallest `min_available -
  succeeded` requests among the tasks that can hold a node) exceeds the limit of its queue or an
  ancestor, where that limit is below what the usable nodes hold (else the cluster is named); or
  a not yet admitted job's minResources exceeds a queue's real capability (enqueue never admits it);
- `GangExceedsCluster`: the gang's minimum exceeds the total allocatable of the nodes its tasks
  can use, or (one class of identical tasks) more tasks than those nodes can hold at once.

Precedence (reasons.py): a set-aside or invalid job gets InvalidJob first (its gang or queue is
not well formed, so there is nothing to fit); NeverFits then comes before every other code,
whether or not the job was admitted (Pending jobs are checked too). Cost: per distinct task
class (request, selector, affinity, tolerations) one numpy pass over the nodes, per queue one
chain lookup, per job one pass over its tasks; nothing runs for jobs placed in the session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.explain.reason_figures import CloseFigures, output_amount, smallest_sum
from scheduler_core.framework.records import Reason, ReasonCode
from scheduler_core.model import JobPhase, TaskStatus
from scheduler_core.plugins.util.queue_attr import format_dim
from scheduler_core.resources import MIN_RESOURCE, Resource, Zero

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo
    from scheduler_core.result import QueueFigures

ROOT = "root"
# Tasks that hold (or held) a node: already placed, so they fit.
HOLDING = (TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING,
           TaskStatus.RELEASING)


@dataclass(slots=True)
class ClassFit:
    """How one task class fits the nodes with nothing else running."""

    matching: int                      # rows passing the static predicates
    usable: np.ndarray                 # rows that also hold one task (allocatable)
    capacity: float                    # tasks of the class the usable rows hold at once
    failures: dict[str, int] = field(default_factory=dict)   # static predicate failures
    limit: tuple[str, float, float, bool] | None = None      # (dim, need, largest, conditional)


def amount_text(name: str, stored: float) -> str:
    """ "1000 cpu", "2000Gi memory", "160 GPUs", "4 example.com/fpga" (stored units in)."""
    text = format_dim(name, stored)
    if name in ("cpu", "memory"):
        return f"{text} {name}"
    if name == "gpu" or name.endswith("/gpu"):
        return f"{text} GPU" + ("" if text == "1" else "s")
    return f"{text} {name}"


def _copy(reason: Reason) -> Reason:
    """A reason of its own for one job (details are extended per job; the chain stays shared)."""
    return Reason(reason.code, reason.message, dict(reason.details))


def _ratio(need: float, limit: float) -> float:
    return math.inf if limit <= 0 else need / limit


class NeverFitsIndex:
    """Per-session cache of class fits and usable totals; `check(job)` answers one job."""

    def __init__(self, ssn: Session, figures: CloseFigures) -> None:
        self.ssn = ssn
        self.figures = figures
        self.table = ssn.node_table
        self.placed_jobs = {t.job_uid for t in ssn.placed.values()}
        # The enabled predicates' failures from node facts alone (PredicateFacets.node_facts).
        self.node_facts = [f.node_facts for _, _, f in ssn.predicate_facets() if f.node_facts is not None]
        self._masks: dict[tuple, tuple[np.ndarray, dict[str, int]]] = {}
        self._fits: dict[tuple, ClassFit] = {}
        self._totals: dict[tuple, tuple[np.ndarray, int]] = {}
        self._queue_limits: dict[str, list[tuple[str, Resource, QueueFigures]]] = {}
        self._floors: dict[str, Resource] = {}
        self._shapes: dict[tuple, tuple[Reason | None, Reason | None]] = {}
        self.enqueue = "enqueue" in ssn.conf.actions

    # -- node facts -----------------------------------------------------------------------------
    def _static_mask(self, task: TaskInfo) -> tuple[np.ndarray, dict[str, int]]:
        key = task.sched_key[1:4]
        hit = self._masks.get(key)
        if hit is None:
            n = len(self.table)
            ok = np.ones(n, dtype=bool)
            counts: dict[str, int] = {}
            for node_facts in self.node_facts:
                for reason, mask in node_facts(task, self.table):
                    eff = mask & ok
                    if eff.any():
                        counts[reason] = counts.get(reason, 0) + int(eff.sum())
                        ok &= ~mask
            hit = self._masks[key] = (ok, counts)
        return hit

    def class_fit(self, task: TaskInfo) -> ClassFit:
        """The fit of the task's class (request, selector, affinity, tolerations), cached."""
        key = task.sched_key[:4]
        hit = self._fits.get(key)
        if hit is not None:
            return hit
        ok, counts = self._static_mask(task)
        table, req = self.table, task.resreq
        alloc = table.allocatable
        per_row = np.full(len(table), np.inf)
        wanted: list[tuple[str, int | None, float]] = []
        for name in req.resource_names():
            wanted.append((name, table.dim_index.get(name), req.get(name)))
        for _, j, v in wanted:
            if j is None:
                per_row[:] = 0
            else:
                per_row = np.minimum(per_row, np.floor((alloc[:, j] + MIN_RESOURCE / 2) / v))
        limited = table.max_pods > 0
        per_row = np.where(limited, np.minimum(per_row, table.max_pods), per_row)
        per_row = np.where(ok, per_row, 0)
        usable = per_row >= 1
        capacity = float(per_row.sum()) if wanted else math.inf
        fit = ClassFit(int(ok.sum()), usable, capacity, counts)
        if not usable.any() and fit.matching:
            fit.limit = self._largest(ok, wanted)
        hit = self._fits[key] = fit
        return hit

    def _largest(self, ok: np.ndarray,
                 wanted: list[tuple[str, int | None, float]]) -> tuple[str, float, float, bool]:
        """(dim, need, largest allocatable among matching nodes, conditional) of the first dimension
        no matching node holds; else, conditional=True, the first one that no node holding the
        other requested dimensions does."""
        alloc = self.table.allocatable
        for name, j, v in wanted:
            top = float(alloc[ok, j].max()) if j is not None else 0.0
            if v - top >= MIN_RESOURCE:
                return name, v, top, False
        for name, j, v in wanted:
            rows = ok.copy()
            for other, jo, vo in wanted:
                if other != name and jo is not None:
                    rows &= (vo - alloc[:, jo]) < MIN_RESOURCE
            top = float(alloc[rows, j].max()) if rows.any() and j is not None else 0.0
            if v - top >= MIN_RESOURCE:
                return name, v, top, True
        name, _, v = wanted[0]
        return name, v, 0.0, True  # pragma: no cover - unreachable when no row holds the task

    def usable_total(self, fits: list[tuple[tuple, ClassFit]]) -> tuple[np.ndarray, int]:
        """(allocatable summed over the rows any of the classes can use, their count), cached."""
        key = tuple(sorted(k for k, _ in fits))
        hit = self._totals.get(key)
        if hit is None:
            rows = np.zeros(len(self.table), dtype=bool)
            for _, fit in fits:
                rows |= fit.usable
            hit = self._totals[key] = (self.table.allocatable[rows].sum(axis=0), int(rows.sum()))
        return hit

    # -- one job --------------------------------------------------------------------------------
    def check(self, job: JobInfo) -> Reason | None:
        """A NeverFits reason for the job, or None (also for jobs this check does not apply to)."""
        if job.uid in self.placed_jobs or job.waiting_task_num():
            return None
        if job.is_ready() and job.check_task_ready():
            return None
        k = job.min_available - job.count(TaskStatus.SUCCEEDED)
        # One pass over the tasks, grouped by sched_key: per class, not per task, from here on.
        index = job.task_status_index
        groups: dict[tuple, list[Any]] = {}   # sched_key -> [task, pending, holding]
        for status in (TaskStatus.PENDING, *HOLDING):
            bucket = index.get(status)
            if not bucket:
                continue
            col = 1 if status is TaskStatus.PENDING else 2
            for task in bucket.values():
                g = groups.get(task.sched_key)
                if g is None:
                    g = groups[task.sched_key] = [task, 0, 0]
                g[col] += 1
        # class key (request, selector, tolerations, affinity) -> [fit, tasks, request, a pending
        # task when the class fits no node]
        classes: dict[tuple, list[Any]] = {}
        placeable = free = 0  # free: members that ask nothing of the queue or the nodes' sums
        for key, (task, pending, holding) in groups.items():
            if task.best_effort:
                placeable += pending + holding
                free += pending + holding
                continue
            fit = self.class_fit(task)
            ok = fit.capacity >= 1
            placeable += holding + (pending if ok else 0)
            if not ok:
                free += holding  # on a node it could not use now: left out of the sums below
            entry = classes.get(key[:4])
            if entry is None:
                entry = classes[key[:4]] = [fit, 0, task.resreq, None]
            entry[1] += pending + holding
            if pending and not ok and entry[3] is None:
                entry[3] = task
        short = placeable < k or self._role_short(job)
        if short:
            return self._node_reason(job, classes)
        # Jobs of the same shape (queue, classes and counts) get the same answers: computed once.
        shape = (job.queue, k, free, tuple((key, e[1]) for key, e in classes.items()))
        gang = self._shapes.get(shape)
        if gang is None:
            gang = self._shapes[shape] = self._gang_reasons(job, k, free, classes)
        if gang[0] is not None:
            return _copy(gang[0])
        if job.min_resources is not None and self.enqueue and job.phase is JobPhase.PENDING:
            found = self._queue_reason(job, job.min_resources, k, None, "minResources")
            if found is not None:
                return found
        return _copy(gang[1]) if gang[1] is not None else None

    def _gang_reasons(self, job: JobInfo, k: int, free: int,
                      classes: dict[tuple, list[Any]]) -> tuple[Reason | None, Reason | None]:
        """(queue-limit reason, cluster reason) of the gang's minimum, each None when it fits."""
        fits = [(key, e[0]) for key, e in classes.items() if e[0].capacity >= 1]
        usable, n_usable = self.usable_total(fits)
        # The gang's minimum: per dimension the smallest requests of the members it still needs
        # beyond the free ones (a lower bound of any set of members that could run together).
        wanted = max(k - free, 0)
        placeable_classes = [(e[2], e[1]) for e in classes.values() if e[0].capacity >= 1]
        if len(placeable_classes) == 1:  # identical tasks (the common case)
            need = placeable_classes[0][0].clone().multi(min(wanted, placeable_classes[0][1]))
        else:
            need = smallest_sum(placeable_classes, wanted)
        return (self._queue_reason(job, need, k, usable, "gang"),
                self._cluster_reason(need, k, wanted, usable, n_usable, fits, classes))

    def _role_short(self, job: JobInfo) -> bool:
        """Some role can never reach its minimum (only when roles bind the gang, as CheckTaskReady)."""
        if not job.task_min_available or job.min_available < job.task_min_available_total:
            return False
        counts: dict[str, int] = {}
        for status in (TaskStatus.PENDING, TaskStatus.SUCCEEDED, *HOLDING):
            for task in job.task_status_index.get(status, {}).values():
                pending = status is TaskStatus.PENDING
                if pending and not task.best_effort and self.class_fit(task).capacity < 1:
                    continue
                counts[task.role] = counts.get(task.role, 0) + 1
        return any(counts.get(role, 0) < n for role, n in job.task_min_available.items() if n > 0)

    def _node_reason(self, job: JobInfo, classes: dict[tuple, list[Any]]) -> Reason | None:
        # A pending task of the first class (in task index order) that fits no node speaks for
        # the job; the message names its role, not the task, so identical jobs read the same.
        found = next(((e[0], e[3]) for e in classes.values() if e[3] is not None), None)
        if found is None:
            return None  # short of members without an unplaceable one: job_valid's business
        fit, task = found
        uid = task.uid
        who = f"a {task.role} task" if task.role else "a task"
        total = len(self.table)
        if fit.matching == 0:
            ranked = sorted(fit.failures.items(), key=lambda kv: (-kv[1], kv[0]))
            parts = ", ".join(f"{n} {r}" for r, n in ranked)
            message = (f"{who} can run on no node: 0/{total} nodes match its selector, affinity "
                       f"and tolerations" + (f" ({parts})" if parts else ""))
            return Reason(ReasonCode.NeverFits, message, {
                "kind": "NoNodeMatches", "task": uid, "nodes": total, "matching_nodes": 0,
                "static_failures": dict(sorted(fit.failures.items()))})
        dim, need, top, conditional = fit.limit
        where = "the largest node it can use with room for its other requests" if conditional else \
            "the largest node it can use"
        message = f"{who} needs {amount_text(dim, need)}, {where} has {format_dim(dim, top)}"
        return Reason(ReasonCode.NeverFits, message, {
            "kind": "TaskLargerThanAnyNode", "task": uid, "dimension": dim, "need": output_amount(dim, need),
            "limit": output_amount(dim, top), "nodes": total, "matching_nodes": fit.matching})

    def _limits_of_queue(self, queue: str) -> list[tuple[str, Resource, QueueFigures]]:
        """(queue, limit, figures) per level the queue plugin enforces, root first (cached)."""
        hit = self._queue_limits.get(queue)
        if hit is None:
            hit = self._queue_limits[queue] = self._limits_of(queue)
        return hit

    def _limits_of(self, queue: str) -> list[tuple[str, Resource, QueueFigures]]:
        figs = self.figures
        out = []
        first, *others = figs.ceiling  # the queue plugin's ceiling figures
        for name in figs.chain(queue):
            if name == ROOT:
                continue
            fig = figs.figures[name]
            limit = getattr(fig, first)
            if limit is None:
                continue
            for other in others:
                more = getattr(fig, other)
                if more is not None and not more.less_equal(limit, Zero):
                    limit = limit.clone().set_max_resource(more)
            out.append((name, limit, fig))
        return out

    @staticmethod
    def _source(fig: QueueFigures, dim: str, value: float) -> str:
        """Which figure sets the limit on one dimension: capability, guarantee or real capability."""
        for name in ("capability", "guarantee"):
            res = getattr(fig, name)
            if res is not None and dim in res.resource_names() and abs(res.get(dim) - value) < MIN_RESOURCE:
                return name
        return "real_capability"

    def _floor(self, queue: str) -> Resource:
        """Per dimension the lowest limit along the queue's chain (cached): a need within it on
        every dimension exceeds no level, the common case, answered without the level walk."""
        hit = self._floors.get(queue)
        if hit is None:
            levels = [limit for _, limit, _ in self._limits_of_queue(queue)]
            names = {n for limit in levels for n in limit.scalars}
            hit = self._floors[queue] = Resource(
                min(limit.milli_cpu for limit in levels), min(limit.memory for limit in levels),
                {n: min(limit.scalars.get(n, 0.0) for limit in levels) for n in names})
        return hit

    def _queue_reason(self, job: JobInfo, need: Resource, k: int, usable: np.ndarray | None,
                      subject: str) -> Reason | None:
        if not self._limits_of_queue(job.queue):
            return None
        floor = self._floor(job.queue)  # a scalar no level lists counts as 0, as in the walk
        if (need.milli_cpu - floor.milli_cpu < MIN_RESOURCE and need.memory - floor.memory < MIN_RESOURCE
                and all(v - floor.scalars.get(n, 0.0) < MIN_RESOURCE for n, v in need.scalars.items())):
            return None
        best = None
        for level, (queue, limit, fig) in enumerate(self._limits_of_queue(job.queue)):
            for dim in need.resource_names():
                n, lim = need.get(dim), limit.get(dim)
                if math.isinf(lim) or n - lim < MIN_RESOURCE:
                    continue
                if usable is not None:
                    j = self.table.dim_index.get(dim)
                    if j is None or lim >= usable[j] - MIN_RESOURCE:
                        continue  # the nodes bound it no less: the cluster check names them
                rank = (-_ratio(n, lim), level)
                if best is None or rank < best[0]:
                    best = (rank, queue, dim, n, lim, fig)
        if best is None:
            return None
        _, queue, dim, n, lim, fig = best
        figure = self._source(fig, dim, lim)
        who = "minResources" if subject == "minResources" else ("job" if k <= 1 else f"gang of {k} tasks")
        message = (f"{who} needs {amount_text(dim, n)}, queue {queue} can never have more than "
                   f"{format_dim(dim, lim)}")
        return Reason(ReasonCode.NeverFits, message, {
            "kind": "GangExceedsQueueLimit", "tasks": k, "queue": queue, "limit_figure": figure,
            "dimension": dim, "need": output_amount(dim, n), "limit": output_amount(dim, lim),
            "queue_chain": self.figures.chain_details(job.queue, "real_capability")})

    def _cluster_reason(self, need: Resource, k: int, wanted: int, usable: np.ndarray, n_usable: int,
                        fits: list[tuple[tuple, ClassFit]], classes: dict[tuple, list[Any]]) -> Reason | None:
        who = "job" if k <= 1 else f"gang of {k} tasks"
        best = None
        for dim in need.resource_names():
            j = self.table.dim_index.get(dim)
            have = float(usable[j]) if j is not None else 0.0
            if need.get(dim) - have >= MIN_RESOURCE:
                rank = -_ratio(need.get(dim), have)
                if best is None or rank < best[0]:
                    best = (rank, dim, have)
        if best is not None:
            _, dim, have = best
            message = (f"{who} needs {amount_text(dim, need.get(dim))}, the nodes it can use have "
                       f"{format_dim(dim, have)} in total")
            return Reason(ReasonCode.NeverFits, message, {
                "kind": "GangExceedsCluster", "tasks": k, "dimension": dim,
                "need": output_amount(dim, need.get(dim)), "limit": output_amount(dim, have),
                "nodes": n_usable})
        if len(fits) != 1 or len(classes) != 1:
            return None
        fit = fits[0][1]
        if wanted <= fit.capacity:  # identical tasks: can the usable nodes hold them all at once?
            return None
        req = next(iter(classes.values()))[2]
        dim = self._packing_dim(req, fit)
        held = int(fit.capacity)
        message = (f"{who} needs {amount_text(dim, need.get(dim))}, the nodes it can use hold at most "
                    f"{held} of its tasks ({amount_text(dim, req.get(dim) * held)})")
        return Reason(ReasonCode.NeverFits, message, {
            "kind": "GangExceedsCluster", "tasks": k, "dimension": dim,
            "need": output_amount(dim, need.get(dim)),
            "limit": output_amount(dim, req.get(dim) * held), "max_tasks": held, "nodes": n_usable})

    def _packing_dim(self, req: Resource, fit: ClassFit) -> str:
        """The requested dimension that holds the fewest tasks over the usable nodes (first on ties)."""
        alloc = self.table.allocatable[fit.usable]
        best = None
        for name in req.resource_names():
            j = self.table.dim_index.get(name)
            held = 0.0
            if j is not None:
                held = float(np.floor((alloc[:, j] + MIN_RESOURCE / 2) / req.get(name)).sum())
            if best is None or held < best[0]:
                best = (held, name)
        return best[1] if best is not None else "cpu"



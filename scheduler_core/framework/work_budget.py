"""Work budget: what one job's evaluation may cost in one session, counted in work units.

The isolation screen bounds what a job may *contain*; this bounds what evaluating it may *cost*,
whatever it contains (many pod (anti-)affinity terms, many replicas of a spreading class).
A work unit is one node evaluated for one of the task's rules: every time the session's
placement queries look at a task, `WorkMeter.charge` adds

    rows looked at x (1 + the task's inter-pod terms)

(predicates over the node table, node scores over the scored rows, a one-row re-score), where
the inter-pod terms are the task's required and preferred pod (anti-)affinity terms and its
topology spread constraints. The count is deterministic (the same snapshot costs the same units
on any machine), so a budget decision never depends on timing.

The actions' `isolation.guard` names the job whose work is being done; a job whose units in the
session pass the budget raises `WorkBudgetExceeded` from inside its evaluation: the guard
discards the job's open statements (its tentative placements this round) and *defers* it, which
records reason `Deferred` and leaves every other job and the rest of the cycle untouched. Any
later work for the job in the same session stops at its first charge. What the job committed in
earlier rounds (an elastic job that was already ready) stays: those were complete decisions.

The budget: `run_session(..., work_budget=N)` (0 = unlimited), else the process default
(`set_default_budget`; the web sets it from `SCHEDULER_WORK_BUDGET`), else `DEFAULT_WORK_BUDGET`,
generous enough that no job of the benchmark clusters comes near it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.model import TaskInfo

# 400 tasks x 1,000 nodes x 50 rules: about a second of evaluation on the benchmark machine.
DEFAULT_WORK_BUDGET = 20_000_000
_default = [DEFAULT_WORK_BUDGET]


def set_default_budget(units: int | None) -> None:
    """The process-wide budget of sessions run without `work_budget` (None: DEFAULT_WORK_BUDGET)."""
    _default[0] = DEFAULT_WORK_BUDGET if units is None else max(0, int(units))


def default_budget() -> int:
    """The budget a session gets when run_session is not given one (0 = unlimited)."""
    return _default[0]


def inter_pod_rules(task: TaskInfo) -> int:
    """Required and preferred pod (anti-)affinity terms plus topology spread constraints."""
    n = len(task.topology_spread_constraints or ())
    aff = task.affinity
    if aff:
        for kind in ("podAffinity", "podAntiAffinity"):
            spec = aff.get(kind) or {}
            n += len(spec.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
            n += len(spec.get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    return n


class WorkBudgetExceeded(Exception):
    """A job's evaluation went over its work budget for the session."""

    def __init__(self, job_uid: str, used: int, budget: int) -> None:
        super().__init__(f"job {job_uid}: {used} work units, budget {budget}")
        self.job_uid = job_uid
        self.used = used
        self.budget = budget

    def message(self) -> str:
        """The Deferred reason's text."""
        return (f"deferred to the next cycle: evaluating this job took more than its work budget "
                f"({self.budget:,} units: nodes evaluated x (1 + pod affinity terms and spread "
                f"constraints per task)); what it placed this round was undone. Fewer inter-pod "
                f"terms per task, or fewer tasks, keep it within the budget")


class WorkMeter:
    """Work units of the session, per job, against the budget (see the module docstring)."""

    __slots__ = ("budget", "total", "by_job", "job", "deferred", "_rules")

    def __init__(self, budget: int | None = None) -> None:
        self.budget = default_budget() if budget is None else max(0, int(budget))
        self.total = 0
        self.by_job: dict[str, int] = {}
        self.job: str | None = None  # whose work is being done (set by isolation.guard)
        self.deferred: dict[str, int] = {}  # job uid -> units when it was stopped
        self._rules: dict[str, int] = {}  # task uid -> inter_pod_rules(task)

    def rules(self, task: TaskInfo) -> int:
        """`inter_pod_rules(task)`, once per task."""
        n = self._rules.get(task.uid)
        if n is None:
            n = self._rules[task.uid] = inter_pod_rules(task)
        return n

    def charge_task(self, task: TaskInfo, rows: int) -> None:
        """`rows` nodes looked at for the task: rows x (1 + its inter-pod rules) units."""
        self.charge(rows * (1 + self.rules(task)))

    def charge(self, units: int) -> None:
        """Count work about to be done; when it would take the current job over its budget,
        raise WorkBudgetExceeded instead (the work is not done, so it is not counted)."""
        job = self.job
        if job is not None:
            stopped = self.deferred.get(job)
            if stopped is not None:  # deferred earlier in the session: no more work for it
                raise WorkBudgetExceeded(job, stopped, self.budget)
            used = self.by_job.get(job, 0) + units
            if self.budget and used > self.budget:
                raise WorkBudgetExceeded(job, used, self.budget)
            self.by_job[job] = used
        self.total += units

    def summary(self) -> dict[str, object]:
        """`SessionResult.work`: total units, the budget, the deferred jobs, the costliest job."""
        top = max(self.by_job.items(), key=lambda kv: (kv[1], kv[0]), default=None)
        return {"units": self.total, "budget": self.budget, "deferred": dict(sorted(self.deferred.items())),
                "max_job": {"job": top[0], "units": top[1]} if top else None}

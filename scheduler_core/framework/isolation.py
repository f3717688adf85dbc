"""Job isolation: one job's bad data or failing evaluation never stops the session for the others.

Two layers, both ending in the same place (`InvalidJob` for that job, the session goes on):
- `screen(snapshot)`, before the session opens: every unfinished task is checked against the
  Kubernetes shapes (`scheduler_core.shapes`). A job with a malformed task is *set aside*: its
  waiting tasks leave the snapshot, so no plugin or action ever evaluates them; its tasks that
  already hold a node keep their resources (they are really there) but lose the malformed
  constraints, which would otherwise be read while placing everybody else (pod anti-affinity).
- `guard(ssn, job, where)`, around an action's work on one job: an exception sets the job aside
  for the rest of the session, the statements opened in the guard are discarded, and the action
  goes on with the next job. When even the discard fails the session state can no longer be
  trusted: `SessionJobError` escapes, and `scheduler.run_session_isolated` runs the session again
  on a fresh snapshot with that job set aside from the start.
Every set-aside job is listed in `result.job_errors` (uid -> JobError.to_json()).
The guard also bounds a job's cost: it names the job to the session's work meter, and a job
over its work budget (`framework.work_budget`) is undone the same way but *deferred* (reason
Deferred, tried again next cycle), not set aside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.work_budget import WorkBudgetExceeded
from scheduler_core.job_log import LogReader
from scheduler_core.model import OCCUPYING_STATUSES, TaskStatus

if TYPE_CHECKING:
    from types import TracebackType

    from scheduler_core.framework.kept import KeptState
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import ClusterSnapshot, JobInfo, TaskInfo

MAX_MESSAGE = 300  # characters of an exception's text kept in a reason (it may echo user data)


@dataclass(frozen=True, slots=True)
class JobError:
    """Why a job was set aside: where (screen, an action, a plugin), the field path when known."""

    where: str
    error: str  # exception type name, or "ShapeError"
    message: str
    field: str = ""

    def reason_message(self) -> str:
        """The one-line InvalidJob message shown to users."""
        if self.field:
            return f"job is invalid: {self.field}: {self.message}"
        return f"job could not be evaluated ({self.where}): {self.error}: {self.message}"

    def to_json(self) -> dict[str, str]:
        """JSON form (result.job_errors, reason details)."""
        return {"where": self.where, "error": self.error, "message": self.message, "field": self.field}


class SessionJobError(RuntimeError):
    """A job's failure left the session in a state that cannot be undone; rerun without the job."""

    def __init__(self, job_uid: str, error: JobError) -> None:
        super().__init__(f"job {job_uid}: {error.reason_message()}")
        self.job_uid = job_uid
        self.error = error


def error_of(exc: BaseException, where: str) -> JobError:
    """A JobError from an exception (a ShapeError keeps its field path)."""
    path = getattr(exc, "path", "")
    message = getattr(exc, "message", None) if path else None
    text = str(message if message is not None else exc)
    text = text.encode("utf-8", "replace").decode("utf-8")  # never fails to render
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "..."
    return JobError(where=where, error=type(exc).__name__, message=text, field=str(path or ""))


# -- layer 1: the screen ---------------------------------------------------------------------------
def _task_problem(task: TaskInfo) -> JobError | None:
    from scheduler_core.shapes import task_shape_problem

    try:
        problem = task_shape_problem(task)
    except Exception as exc:  # the checker itself must not stop the session
        return error_of(exc, "screen")
    return error_of(problem, "screen") if problem is not None else None


def _spec_id(task: TaskInfo) -> tuple:
    # Loaders share decoded spec objects between identical tasks: check each combination once.
    # Amounts and duration are plain numbers (each task has its own Resource): keyed by value.
    req = task.resreq
    return (id(task.affinity), id(task.tolerations), id(task.node_selector), id(task.labels),
            id(task.topology_spread_constraints), req.milli_cpu, req.memory,
            tuple(req.scalars.items()) if req.scalars else (), task.duration)


def _same_spec(a: TaskInfo, b: TaskInfo) -> bool:
    """b's spec equals a's (the common case: consecutive tasks of one job). Equality, not
    identity: loaders that give each task its own (equal) dicts are screened as cheaply."""
    ra, rb = a.resreq, b.resreq
    return (ra.milli_cpu == rb.milli_cpu and ra.memory == rb.memory and a.duration == b.duration
            and a.labels == b.labels and a.node_selector == b.node_selector
            and a.tolerations == b.tolerations and a.affinity == b.affinity
            and a.topology_spread_constraints == b.topology_spread_constraints
            and ra.scalars == rb.scalars)


class ScreenedJobs:
    """screen's part of a kept state (framework.kept): where it stands in the job table's change
    log, and the jobs it set aside last time (looked at again whatever the log says, as a walk
    would: their malformed tasks are never marked screened)."""

    def __init__(self) -> None:
        self.reader = LogReader()
        self.found: set[str] = set()


def screen(snapshot: ClusterSnapshot, kept: KeptState | None = None) -> dict[str, JobError]:
    """Set aside every job with a malformed unfinished task; returns what was set aside now.

    The shape checks bound every structure (depth, sizes), so a task that passes them is safe for
    the plugins (its sched_key included). Each combination of spec objects is checked once.
    With a kept state only the jobs the table's change log names (every new task object comes
    with one: scheduler_core.job_log) and those set aside last time are looked at; a task already
    screened is skipped either way.
    """
    found: dict[str, JobError] = {}
    checked: dict[tuple[int, ...], JobError | None] = {}
    jobs = snapshot.jobs
    part = kept.part("isolation.screen", ScreenedJobs) if kept is not None else None
    changed, log, pos = part.reader.changed(jobs) if part is not None else (None, None, 0)
    if changed is None:
        visit: Any = jobs.keys()
    else:  # in table order, as a walk would go
        order = getattr(jobs, "order", None)
        visit = sorted((changed | part.found) & jobs.keys(), key=order.__getitem__ if order else None)
    for uid in visit:
        job = jobs[uid]
        if uid in snapshot.set_aside:
            continue
        prev: TaskInfo | None = None
        for task in job.tasks.values():
            if task._screened or task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                continue
            if prev is not None and _same_spec(prev, task):
                task._screened = True  # prev passed (a failure ends the job's loop)
                continue
            key = _spec_id(task)
            if key in checked:
                problem = checked[key]
            else:
                problem = checked[key] = _task_problem(task)
            if problem is not None:
                found[uid] = problem
                break
            task._screened = True
            prev = task
    for uid, problem in found.items():
        set_aside(snapshot, uid, problem)
    if part is not None:
        # (set_aside's changes are in the log after `pos`: the next screen looks at them again.)
        part.reader.commit(log, pos)
        part.found = set(found)
    return found


def set_aside(snapshot: ClusterSnapshot, job_uid: str, error: JobError) -> None:
    """Take a job out of the session: waiting tasks removed, held nodes kept without constraints."""
    snapshot.set_aside[job_uid] = error
    job = snapshot.jobs.get(job_uid)
    if job is None:
        return
    for task in list(job.tasks.values()):
        if task.status in OCCUPYING_STATUSES:
            _neutralise(task)
        elif task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
            node = snapshot.nodes.get(task.node_name) if task.node_name else None
            if node is not None:
                node.remove_task(task)
            job.delete_task(task)


def _neutralise(task: TaskInfo) -> None:
    task.affinity, task.tolerations, task.node_selector = None, [], {}
    task.topology_spread_constraints, task.labels = [], {}
    task._key = None


# -- layer 2: the guard ----------------------------------------------------------------------------
class GuardScope:
    """What a guarded block opened: its statements are discarded when the block fails."""

    __slots__ = ("ssn", "statements")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.statements: list[Statement] = []

    def statement(self) -> Statement:
        """A new Statement of the session, discarded if the guarded block raises."""
        stmt = self.ssn.statement()
        self.statements.append(stmt)
        return stmt


def _undo(scope: GuardScope, job: JobInfo, error: JobError) -> None:
    try:
        for stmt in reversed(scope.statements):
            stmt.discard()
    except Exception as undo_exc:
        raise SessionJobError(job.uid, error) from undo_exc


def defer(ssn: Session, job: JobInfo, exc: WorkBudgetExceeded, where: str) -> None:
    """Record that the job went over its work budget: reason Deferred, once per session."""
    from scheduler_core.framework.records import ReasonCode

    meter = ssn.work
    if job.uid in meter.deferred:
        return
    meter.deferred[job.uid] = exc.used
    ssn.record_reason(job.uid, ReasonCode.Deferred, exc.message(), where,
                      {"work_units": exc.used, "work_budget": exc.budget, "action": where})


class guard:  # noqa: N801 - used as a function: `with guard(ssn, job, where) as scope:`
    """Run one job's work; on an exception set the job aside and undo what its statements did.

    The session's work meter charges the block's work to the job (framework.work_budget): over
    its budget, the statements are undone the same way and the job is deferred (reason
    Deferred, not set aside). `on_failure` runs after the undo (an action's caches that must
    forget the undone work); for a deferral, `on_defer(placed tasks)` runs before the undo
    instead when given (a cheaper, targeted forget), else `on_failure` after it.
    (A class rather than a generator context manager: allocate enters one per job per session.)
    """

    __slots__ = ("ssn", "job", "where", "on_failure", "on_defer", "scope", "meter", "outer")

    def __init__(self, ssn: Session, job: JobInfo, where: str, on_failure: Callable[[], Any] | None = None,
                 on_defer: Callable[[list[TaskInfo]], Any] | None = None) -> None:
        self.ssn, self.job, self.where = ssn, job, where
        self.on_failure, self.on_defer = on_failure, on_defer
        self.scope = GuardScope(ssn)
        self.meter = getattr(ssn, "work", None)
        self.outer: str | None = None

    def __enter__(self) -> GuardScope:
        meter = self.meter
        if meter is not None:
            self.outer = meter.job
            meter.job = self.job.uid
        return self.scope

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        try:
            if exc is None or not isinstance(exc, Exception):
                return False
            scope, job, where = self.scope, self.job, self.where
            if isinstance(exc, WorkBudgetExceeded):
                if self.on_defer is not None:
                    self.on_defer([t for stmt in scope.statements for t in stmt.placed_tasks()])
                _undo(scope, job, error_of(exc, where))
                defer(self.ssn, job, exc, where)
                if self.on_defer is None and self.on_failure is not None:
                    self.on_failure()
                return True
            error = error_of(exc, where)
            _undo(scope, job, error)
            self.ssn.quarantine(job, error)
            if self.on_failure is not None:
                self.on_failure()
            return True
        finally:
            if self.meter is not None:
                self.meter.job = self.outer

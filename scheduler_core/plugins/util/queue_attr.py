"""Queue-attribute bookkeeping shared by the queue plugins (proportion, capacity).

`QueueAttr` is Volcano's `queueAttr`: the per-queue figures a queue plugin keeps current within
a session (allocated and share move with every allocate/evict event). This module also holds
the job -> queue accounting rules, the share rule, and the Volcano-style quota messages and
queue-chain details that reasons carry to the dashboard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler_core.model import ALLOCATED_STATUSES, JobInfo, JobPhase, TaskStatus
from scheduler_core.resources import MIN_RESOURCE, Resource, exceeded_part
from scheduler_core.result import QueueFigures

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session

try:  # reasons.py may land later; underneath, the codes are plain strings.
    from scheduler_core.framework.records import ReasonCode as _ReasonCode

    def reason_code(name: str) -> Any:
        """The ReasonCode member named `name`."""
        return _ReasonCode(name)
except ImportError:  # pragma: no cover - only while reasons.py is missing

    def reason_code(name: str) -> Any:
        """The reason code `name` (plain string until reasons.py exists)."""
        return name


@dataclass(eq=False, slots=True)
class QueueAttr:
    """Runtime figures of one queue (Volcano's queueAttr). Resources are owned (never shared)."""

    name: str
    weight: int = 1
    share: float = 0.0
    deserved: Resource = field(default_factory=Resource.empty)
    allocated: Resource = field(default_factory=Resource.empty)
    request: Resource = field(default_factory=Resource.empty)
    elastic: Resource = field(default_factory=Resource.empty)
    inqueue: Resource = field(default_factory=Resource.empty)
    capability: Resource | None = None        # effective: missing cpu/memory = unlimited
    real_capability: Resource | None = None
    guarantee: Resource = field(default_factory=Resource.empty)
    ancestors: list[str] = field(default_factory=list)   # root .. parent (capacity hierarchy)
    children: list[str] = field(default_factory=list)

    def clone(self) -> QueueAttr:
        """Copy for simulation: the figures that move (allocated, inqueue) are deep-copied."""
        return QueueAttr(self.name, self.weight, self.share, self.deserved, self.allocated.clone(),
                         self.request, self.elastic, self.inqueue.clone(), self.capability,
                         self.real_capability, self.guarantee, self.ancestors, self.children)


def effective_capability(spec: Resource | None) -> Resource | None:
    """The queue's capability with unset (<= 0) cpu/memory meaning unlimited (Volcano: MaxFloat64)."""
    if spec is None:
        return None
    cap = spec.clone()
    if cap.milli_cpu <= 0:
        cap.milli_cpu = math.inf
    if cap.memory <= 0:
        cap.memory = math.inf
    return cap


def job_contribution(job: JobInfo) -> tuple[Resource, Resource, Resource, Resource]:
    """(allocated, request, inqueue, elastic) a job adds to its queue (Volcano's session open).

    request = allocated-status + Pending tasks. inqueue = min resources of an Inqueue job, or,
    for a Running job that has min resources and at least min_available allocated tasks, the
    part of its min resources not yet allocated. elastic = allocated above min resources.
    An Inqueue job already holding min_available allocated tasks counts as Running: our result
    keeps a job bound this cycle Inqueue until the next close, where Volcano's session close
    already makes it Running; reserving its whole minimum again would count it twice.
    """
    allocated = job.allocated.clone()
    request = allocated.clone()
    for task in job.task_status_index.get(TaskStatus.PENDING, {}).values():
        request.add(task.resreq)
    inqueue = Resource.empty()
    holds_gang = job.count(*ALLOCATED_STATUSES) >= job.min_available
    if job.phase is JobPhase.INQUEUE and not holds_gang:
        inqueue.add(job.deducted_min_resources())
    elif (job.phase in (JobPhase.RUNNING, JobPhase.INQUEUE) and job.min_resources is not None
          and holds_gang):
        inqueue.add(exceeded_part(job.min_resources, job.allocated))
    return allocated, request, inqueue, job.elastic_resources()


def add_contribution(attr: QueueAttr, parts: tuple[Resource, Resource, Resource, Resource]) -> None:
    """Add a job's (allocated, request, inqueue, elastic) to a queue's figures."""
    attr.allocated.add(parts[0])
    attr.request.add(parts[1])
    attr.inqueue.add(parts[2])
    attr.elastic.add(parts[3])


def update_share(attr: QueueAttr, best_effort_is_one: bool = False) -> None:
    """share = max over deserved's dimensions of allocated / deserved.

    Capacity treats a queue without deserved as best-effort with share 1 (`best_effort_is_one`);
    proportion gives it 0.
    """
    # Hot path (every allocate/evict event): the dimensions of deserved.resource_names() inline;
    # they hold >= MIN_RESOURCE, so helpers.Share reduces to a plain division.
    alloc, des = attr.allocated, attr.deserved
    res, counted = 0.0, False
    if des.milli_cpu >= MIN_RESOURCE:
        res, counted = alloc.milli_cpu / des.milli_cpu, True
    if des.memory >= MIN_RESOURCE:
        counted = True
        s = alloc.memory / des.memory
        if s > res:
            res = s
    if des.scalars:
        got = alloc.scalars
        for name, d in des.scalars.items():
            if d >= MIN_RESOURCE:
                counted = True
                s = got.get(name, 0.0) / d
                if s > res:
                    res = s
    attr.share = 1.0 if best_effort_is_one and not counted else res


def over_dimensions(used: Resource, req: Resource, limit: Resource) -> list[str]:
    """Dimensions `req` asks for (> 0) where used + req exceeds limit beyond MIN_RESOURCE.

    Same answer as `(used + req).less_equal_with_dimension_and_resources_name(limit, req)`
    without building the sum: allocatable runs once per task and level.
    """
    out: list[str] = []
    if req.milli_cpu > 0:
        x, lim = used.milli_cpu + req.milli_cpu, limit.milli_cpu
        if not (x < lim or abs(x - lim) < MIN_RESOURCE):
            out.append("cpu")
    if req.memory > 0:
        x, lim = used.memory + req.memory, limit.memory
        if not (x < lim or abs(x - lim) < MIN_RESOURCE):
            out.append("memory")
    if req.scalars:
        for name in sorted(req.scalars):
            v = req.scalars[name]
            if v > 0:
                x, lim = used.scalars.get(name, 0.0) + v, limit.scalars.get(name, 0.0)
                if not (x < lim or abs(x - lim) < MIN_RESOURCE):
                    out.append(name)
    return out


# -- messages and dashboard details -------------------------------------------------------------

def copies_within(used: Resource, req: Resource, limit: Resource, k_max: int) -> int:
    """The largest k <= k_max such that `used` plus j requests (added one by one, as the events
    add them) leaves room for one more within `limit` (over_dimensions) for every j < k."""
    acc = used.clone()
    k = 0
    while k < k_max and not over_dimensions(acc, req, limit):
        acc.add(req)
        k += 1
    return k


_BINARY = (("Ti", 2 ** 40), ("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10))


def _num(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def format_dim(name: str, stored: float) -> str:
    """Human text of one dimension in stored units: cpu in cores, memory in Gi/Mi/Ki, scalars in units."""
    if math.isinf(stored):
        return "unlimited"
    if name == "cpu":
        return _num(stored / 1000)
    if name == "memory":
        # The largest unit that states the amount exactly ("1.5Ti", "2000Gi"), else the largest
        # unit it reaches, rounded ("1.95Ti" only for amounts no unit states exactly).
        fits = [(suffix, size) for suffix, size in _BINARY if abs(stored) >= size]
        for suffix, size in fits:
            if abs(round(stored / size, 2) * size - stored) < 0.5:
                return _num(stored / size) + suffix
        if fits:
            return _num(stored / fits[0][1]) + fits[0][0]
        return _num(stored)
    return _num(stored / 1000)


def insufficient_text(names: list[str], need: Resource, left: Resource) -> str:
    """ "insufficient cpu (need 10, 4 left), insufficient memory (...)" for the failing dimensions."""
    parts = [f"insufficient {n} (need {format_dim(n, need.get(n))}, "
             f"{format_dim(n, max(left.get(n), 0.0))} left)" for n in names]
    return ", ".join(parts)


def shape(res: Resource) -> tuple[Any, ...]:
    """A hashable key of every dimension of a resource (equal keys: equal resources)."""
    scalars = tuple(sorted(res.scalars.items())) if res.scalars else ()
    return (res.milli_cpu, res.memory, scalars)


def quota_message(queue: str, names: list[str], need: Resource, left: Resource) -> str:
    """Volcano's wording: "queue training resource quota insufficient: insufficient cpu (need 10, 4 left)"."""
    return f"queue {queue} resource quota insufficient: {insufficient_text(names, need, left)}"


def quantities(res: Resource | None) -> dict[str, float] | None:
    """JSON-safe output units of a resource (unlimited dimensions are left out)."""
    if res is None:
        return None
    return {k: v for k, v in res.to_quantities().items() if not math.isinf(v)}


def chain_entry(attr: QueueAttr, limit: Resource | None) -> dict[str, Any]:
    """One level of details["queue_chain"]: {queue, deserved, allocated, headroom} (output units).

    headroom = limit - allocated per dimension (never negative); `limit` is what the plugin
    checks at that level (deserved for proportion, real capability for capacity).
    """
    headroom = exceeded_part(limit, attr.allocated) if limit is not None else None
    return {"queue": attr.name, "deserved": quantities(attr.deserved),
            "allocated": quantities(attr.allocated), "headroom": quantities(headroom)}


def figures(attr: QueueAttr, spec_capability: Resource | None, overused: bool) -> QueueFigures:
    """The QueueFigures of an attr (copies, so later changes do not leak into the result).

    An empty guarantee is reported as unset (None), like an unset capability.
    """
    return QueueFigures(
        deserved=attr.deserved.clone(), allocated=attr.allocated.clone(), request=attr.request.clone(),
        inqueue=attr.inqueue.clone(), elastic=attr.elastic.clone(),
        capability=spec_capability.clone() if spec_capability is not None else None,
        real_capability=attr.real_capability.clone() if attr.real_capability is not None else None,
        guarantee=None if attr.guarantee.is_empty() else attr.guarantee.clone(),
        share=attr.share, weight=attr.weight, overused=overused)


class ReasonMemo:
    """Records a plugin's reasons through `ssn.record_reason`, once per job and code.

    build_reasons keeps the first record of each code, and allocatable is asked once per task:
    callers test `has()` first so repeats cost no message formatting.
    """

    def __init__(self, ssn: Session, plugin: str) -> None:
        self.ssn = ssn
        self.plugin = plugin
        self._seen: set[tuple[str, str]] = set()

    def has(self, job_uid: str, code: str) -> bool:
        """Whether this plugin already recorded `code` for the job."""
        return (job_uid, code) in self._seen

    def record(self, job_uid: str, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        """Record unless this code was already recorded for the job."""
        key = (job_uid, code)
        if key in self._seen:
            return
        self._seen.add(key)
        self.ssn.record_reason(job_uid, reason_code(code), message, self.plugin, details)


# The queue fields a queue plugin shares by (what `ignored_queue_fields` names).
SHARE_FIELDS = ("weight", "capability", "guarantee", "deserved")

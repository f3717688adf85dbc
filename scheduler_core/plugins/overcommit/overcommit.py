"""overcommit: admit jobs against a virtual pool `total x factor - used` (as in Volcano).

Arguments: `overcommit-factor` (default 1.2; a value below 1 or not a number is replaced by the
default, with a warning in `result.warnings`). At session open: idle = total allocatable of
schedulable nodes x factor - sum of every node's used; inqueue = min_resources of Inqueue jobs
plus, for Running jobs with min_resources whose allocated task count reached min_available
(and Inqueue jobs in that state: bound last cycle), the part of min_resources not yet allocated.
Job enqueueable: best-effort jobs (no min_resources) are permitted; otherwise permit when
inqueue + min_req <= idle on the dimensions min_req asks for, else reject (recorded as
NotEnqueued with the numbers). Job enqueued: inqueue += min_req.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.kept_nodes import nodes_used
from scheduler_core.framework.records import ReasonCode, format_amount
from scheduler_core.model import ALLOCATED_STATUSES, JobPhase
from scheduler_core.plugins.util.job_figures import JobValues, values_holder
from scheduler_core.plugins.util.job_follow import ABSENT, Follower
from scheduler_core.plugins.util.queue_attr import over_dimensions
from scheduler_core.plugins.util.votes import PERMIT, REJECT
from scheduler_core.resources import Resource, exact_whole, exceeded_part

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo

DEFAULT_FACTOR = 1.2
FACTOR_ARG = "overcommit-factor"


def parse_factor(arguments: dict[str, Any]) -> tuple[float, str | None]:
    """(factor, warning or None) from the plugin arguments."""
    raw = arguments.get(FACTOR_ARG)
    if raw is None:
        return DEFAULT_FACTOR, None
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 1.0:
        return DEFAULT_FACTOR, (f"overcommit: invalid {FACTOR_ARG} {raw!r}: it cannot be less than 1, "
                                f"using the default {DEFAULT_FACTOR}")
    return value, None


def job_inqueue_reservation(job: JobInfo) -> Resource | None:
    """What a job holds in the inqueue pool, or None (Volcano's overcommit session open).

    An Inqueue job already holding min_available allocated tasks counts as Running (it was bound
    last cycle; Volcano's session close would have made it Running), so its used resources are
    not reserved a second time.
    """
    if job.min_resources is None:
        return None
    holds_gang = job.count(*ALLOCATED_STATUSES) >= job.min_available
    if job.phase is JobPhase.INQUEUE and not holds_gang:
        return job.deducted_min_resources()
    if job.phase in (JobPhase.RUNNING, JobPhase.INQUEUE) and holds_gang:
        # util.GetInqueueResource: the part of min_resources not allocated yet.
        return exceeded_part(job.get_min_resources(), job.allocated)
    return None


def _sum(held: Iterable[Resource | None]) -> tuple[Resource, dict[str, int], bool]:
    """The reservations summed in order (what a fresh open adds up), how many hold each scalar,
    and whether every one and the sum are exact."""
    total, counts, exact = Resource.empty(), {}, True
    for r in held:
        if r is not None:
            total.add(r)
            for name in r.scalars:
                counts[name] = counts.get(name, 0) + 1
            exact = exact and exact_whole(r)
    return total, counts, exact and exact_whole(total)


def over_pool(inqueue: Resource, min_req: Resource, idle: Resource) -> list[str]:
    """The dimensions min_req asks for (> 0) where inqueue + min_req does not fit idle (within
    MIN_RESOURCE): `inqueue.clone().add(min_req).less_equal_with_dimension_and_resources_name(idle,
    min_req)`'s names, with the same float operations and no copies (asked once per waiting job):
    a queue's check (`queue_attr.over_dimensions`) with the cluster's pool as the queue."""
    return over_dimensions(inqueue, min_req, idle)


class _KeptPool:
    """overcommit's part of the KeptState: the inqueue pool as of the last open, moved by the
    reservations of the jobs a JobValues call changed (old out, new in). Exact while every
    reservation and the sum are whole numbers below 2**53 and none negative (else summed again in
    job order); a scalar leaves the sum with its last holder, as a fresh sum lacks it."""

    def __init__(self) -> None:
        self.held: Follower[Resource | None, Resource | None] = Follower(_same)
        self.total = Resource.empty()
        self.counts: dict[str, int] = {}
        self.exact = False

    def open(self, holder: JobValues[Resource | None]) -> Resource:
        """The session's own pool (a copy)."""
        pairs = self.held.follow(holder)
        if pairs is None or not self.exact or not self._apply(pairs):
            self.total, self.counts, self.exact = _sum(self.held.map.values())
        return self.total.clone()

    def _apply(self, pairs: list[tuple[Any, Any]]) -> bool:
        total, counts = self.total.clone(), self.counts
        for old, new in pairs:
            if old is not ABSENT and old is not None:
                total.sub_without_assert(old)
                for name in old.scalars:
                    left = counts[name] - 1
                    if left:
                        counts[name] = left
                    else:
                        del counts[name], total.scalars[name]
            if new is not ABSENT and new is not None:
                if not exact_whole(new):
                    return False
                total.add(new)
                for name in new.scalars:
                    counts[name] = counts.get(name, 0) + 1
        if not exact_whole(total):
            return False
        self.total = total
        return True


def _same(r: Resource | None) -> Resource | None:
    return r


class OvercommitPlugin(Plugin):
    """Cluster-level enqueue gate with an over-committed idle pool."""

    name = "overcommit"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.factor, self.warning = parse_factor(self.arguments)
        self.total_resource = Resource.empty()
        self.idle_resource = Resource.empty()
        self.inqueue_resource = Resource.empty()

    def on_session_open(self, ssn: Session) -> None:
        """Compute the pool and register job enqueueable / enqueued."""
        if self.warning:
            ssn.result.warnings.append(self.warning)
        self.total_resource = ssn.total_resource.clone()
        used = nodes_used(ssn)  # every node's used, summed (kept with the node table)
        self.idle_resource = self.total_resource.clone().multi(self.factor).sub_without_assert(used)
        # Per job, kept across sessions (plugins.util.job_figures): only moved jobs are recomputed,
        # and with a KeptState the pool moves by their difference only (_KeptPool).
        holder = values_holder(ssn, "overcommit.inqueue", job_inqueue_reservation)
        if ssn.kept is not None:
            self.inqueue_resource = ssn.kept.part("overcommit.pool", _KeptPool).open(holder)
        else:
            self.inqueue_resource = _sum(holder.jobs[uid][2] for uid in holder.jobs)[0]
        ssn.add_job_enqueueable_fn(self.name, lambda job: self.job_enqueueable(ssn, job))
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> int:
        """Permit when the job's min resources fit the pool left after other inqueue jobs."""
        min_req = job.min_resources
        if min_req is None:
            return PERMIT
        names = over_pool(self.inqueue_resource, min_req, self.idle_resource)
        if not names:
            return PERMIT
        left = self.idle_resource.clone().sub_without_assert(self.inqueue_resource)
        clauses = ", ".join(f"insufficient {n} (need {format_amount(n, min_req.get(n))}, "
                            f"{format_amount(n, max(left.get(n), 0.0))} left)" for n in names)
        ssn.record_reason(job.uid, ReasonCode.NotEnqueued,
                          f"resource in cluster is overused (overcommit factor {self.factor:g}): {clauses}",
                          self.name)
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the admitted job's min resources in the inqueue pool."""
        if job.min_resources is not None:
            self.inqueue_resource.add(job.deducted_min_resources())

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session state."""
        self.idle_resource = Resource.empty()
        self.inqueue_resource = Resource.empty()

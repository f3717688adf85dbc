"""resourcequota: namespace resource quotas checked when jobs are enqueued (as in Volcano).

Job enqueueable: permit jobs without min_resources and jobs whose namespace has no quota.
Otherwise only the dimensions the quota defines and the job asks for are checked:
`used + admitted this session + min_req <= hard`; a job over the quota is rejected with
`namespace ns1 resource quota insufficient, requested: cpu 4, used: cpu 8, limited: cpu 10`
(recorded as NotEnqueued). Quota dimensions: cpu / memory when above 0 (a Resource cannot tell
"0" from "unset"), scalars when present (so `nvidia.com/gpu: 0` forbids GPUs).
Deviation from Volcano, on purpose: a job's request counts as pending in its namespace when it is
actually enqueued (job-enqueued callback), not as soon as this plugin alone permitted it, so a
job rejected by another plugin does not consume the namespace's quota for the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.records import ReasonCode, format_amount
from scheduler_core.plugins.util.votes import PERMIT, REJECT
from scheduler_core.resources import MIN_RESOURCE, Resource

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo


def hard_names(quota: Resource) -> list[str]:
    """Dimensions a quota limits: cpu / memory when above 0, every scalar it lists (sorted)."""
    names = [n for n, v in (("cpu", quota.milli_cpu), ("memory", quota.memory)) if v > 0]
    return names + sorted(quota.scalars)


def requested_names(min_req: Resource, hard: list[str]) -> list[str]:
    """The quota's dimensions the job asks for (above 0)."""
    return [n for n in hard if min_req.get(n) > 0]


def _listing(names: list[str], r: Resource) -> str:
    return ", ".join(f"{n} {format_amount(n, r.get(n))}" for n in names)


class ResourceQuotaPlugin(Plugin):
    """Namespace quota gate for enqueue."""

    name = "resourcequota"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        # namespace -> min resources of jobs admitted in this session
        self.pending: dict[str, Resource] = {}

    def on_session_open(self, ssn: Session) -> None:
        """Register job enqueueable / enqueued."""
        self.pending = {}
        ssn.add_job_enqueueable_fn(self.name, lambda job: self.job_enqueueable(ssn, job))
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> int:
        """Permit when the namespace quota still holds the job's min resources."""
        ns = ssn.namespaces.get(job.namespace)
        if job.min_resources is None or ns is None or ns.quota is None:
            return PERMIT
        names = requested_names(job.min_resources, hard_names(ns.quota))
        used = ns.used.clone()
        if job.namespace in self.pending:
            used.add(self.pending[job.namespace])
        new_usage = used.clone().add(job.min_resources)
        exceeded = [n for n in names if new_usage.get(n) - ns.quota.get(n) >= MIN_RESOURCE]
        if not exceeded:
            return PERMIT
        message = (f"namespace {job.namespace} resource quota insufficient, "
                   f"requested: {_listing(exceeded, job.min_resources)}, used: {_listing(exceeded, used)}, "
                   f"limited: {_listing(exceeded, ns.quota)}")
        ssn.record_reason(job.uid, ReasonCode.NotEnqueued, message, self.name,
                          {"namespace": job.namespace, "exceeded": exceeded})
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Count the admitted job's min resources against its namespace for this session."""
        if job.min_resources is not None:
            self.pending.setdefault(job.namespace, Resource.empty()).add(job.min_resources)

    def on_session_close(self, ssn: Session) -> None:
        """Drop per-session state."""
        self.pending = {}

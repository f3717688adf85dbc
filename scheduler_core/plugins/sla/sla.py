"""sla: jobs that waited longer than their SLA go first and are let through (as in Volcano).

Arguments: `sla-waiting-time` (Go duration such as "2h30m", or seconds as a number), the global
waiting time; a job's own `sla_waiting_time` overrides it. Invalid or non-positive global values
are ignored with a warning. Extension points:
- job order: jobs with a waiting time before jobs without; then earlier deadline
  (created + waiting time) first; equal deadlines abstain (0);
- job enqueueable and job pipelined: permit once `now - created >= waiting time`, else abstain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Plugin
from scheduler_core.plugins.util.durations import parse_duration
from scheduler_core.plugins.util.votes import ABSTAIN, PERMIT

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo

WAITING_TIME_ARG = "sla-waiting-time"

class SlaPlugin(Plugin):
    """SLA waiting time: job order, enqueue and pipeline permits."""

    name = "sla"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.job_waiting_time: float | None = None
        self.warning: str | None = None
        if WAITING_TIME_ARG in self.arguments:
            raw = self.arguments[WAITING_TIME_ARG]
            try:
                seconds = parse_duration(raw)
            except ValueError:
                seconds = 0.0
            if seconds <= 0:
                self.warning = f"sla: invalid global {WAITING_TIME_ARG} {raw!r}; ignored"
            else:
                self.job_waiting_time = seconds

    def waiting_time(self, job: JobInfo) -> float | None:
        """The job's own waiting time, else the global one, else None (no SLA)."""
        return job.sla_waiting_time if job.sla_waiting_time is not None else self.job_waiting_time

    def job_order(self, lhs: JobInfo, rhs: JobInfo) -> int:
        """Jobs with an SLA first, then the earlier deadline."""
        lw, rw = self.waiting_time(lhs), self.waiting_time(rhs)
        if lw is None:
            return 0 if rw is None else 1
        if rw is None:
            return -1
        ld, rd = lhs.created + lw, rhs.created + rw
        return -1 if ld < rd else (1 if ld > rd else 0)

    def job_order_key(self, job: JobInfo) -> tuple[int, float]:
        """Sort key of job_order: (0, deadline) for jobs with an SLA, (1, 0) after them."""
        wt = self.waiting_time(job)
        return (1, 0.0) if wt is None else (0, job.created + wt)

    def on_session_open(self, ssn: Session) -> None:
        """Register job order, job enqueueable and job pipelined."""
        if self.warning:
            ssn.result.warnings.append(self.warning)

        def permit(job: JobInfo) -> int:
            wt = self.waiting_time(job)
            if wt is None or ssn.now - job.created < wt:
                return ABSTAIN
            return PERMIT

        ssn.add_job_order_fn(self.name, self.job_order, key_fn=self.job_order_key)
        ssn.add_job_enqueueable_fn(self.name, permit)
        ssn.add_job_pipelined_fn(self.name, permit)

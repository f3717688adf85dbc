"""Queues whose share keeps jobs waiting ("starving"), read from the jobs' own reasons.

A queue is starving only when a waiting job's reason is QueueOverDeserved or QueueOverCapability
*at that queue* (`reason_details.queue`, the level that refused): a job waiting for nodes, for
its gang, or for a parent's share does not make its own leaf starving, and each job counts at
exactly one queue, so parents and leaves are never counted twice. One grouped query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count

from schedweb.dashboard.pending import waiting_jobs

SHARE_CODES = ("QueueOverDeserved", "QueueOverCapability")


@dataclass
class ShareWait:
    """The waiting jobs whose reason names one queue's share, and what that reason compares."""

    queue: str
    jobs: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    # The figure the refusals compared with ("deserved" / "real_capability"), and on which resources.
    limit_figures: set[str] = field(default_factory=set)
    dims: set[str] = field(default_factory=set)


def share_waits() -> dict[str, ShareWait]:
    """{queue name: ShareWait} over the waiting jobs (schedweb.dashboard.pending.waiting_jobs)."""
    rows = (waiting_jobs().filter(reason_code__in=SHARE_CODES)
            .values("reason_code", "reason_details__queue", "reason_details__limit_figure",
                    "reason_details__insufficient")
            .annotate(n=Count("id")).order_by())
    out: dict[str, ShareWait] = {}
    for row in rows:
        name = row["reason_details__queue"]
        if not isinstance(name, str) or not name:
            continue  # a reason recorded without figures names no queue: nothing to say about one
        wait = out.setdefault(name, ShareWait(name))
        wait.jobs += row["n"]
        wait.codes[row["reason_code"]] = wait.codes.get(row["reason_code"], 0) + row["n"]
        if isinstance(row["reason_details__limit_figure"], str):
            wait.limit_figures.add(row["reason_details__limit_figure"])
        if isinstance(row["reason_details__insufficient"], dict):
            wait.dims.update(row["reason_details__insufficient"])
    return out

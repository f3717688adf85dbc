"""The words for a scheduling reason: a short label and a sentence per ReasonCode, and the
per-node failure summary. Plain text, no queries (schedweb.dashboard.pending reads the jobs)."""

from __future__ import annotations

from collections.abc import Mapping

# What each scheduler_core ReasonCode means, said to a team lead (first half of the sentence).
REASON_LABELS: dict[str, str] = {
    "NeverFits": "Can never run",
    "Deferred": "Deferred: too costly this cycle",
    "QueueClosed": "Queue closed",
    "InvalidJob": "Invalid job",
    "NotEnqueued": "Not admitted yet",
    "QueueOverCapability": "Queue at its capability",
    "QueueOverDeserved": "Queue at its deserved share",
    "GangUnschedulable": "Gang cannot start",
    "NodeFit": "No node fits",
    "WaitingForPreemption": "Waiting for preemption",
    "Unknown": "Unknown",
    "": "Not scheduled yet",
}
REASON_SENTENCES: dict[str, str] = {
    "NeverFits": "The job can never run as submitted, whatever else finishes",
    "Deferred": "Evaluating the job cost more than one job may in a scheduling cycle, so it was put off "
                "to the next cycle",
    "QueueClosed": "Its queue is closed, so it will not be scheduled until the queue is opened again",
    "InvalidJob": "The job is invalid and will never be scheduled as it is",
    "NotEnqueued": "The job has not been admitted: starting it would exceed a quota or the cluster's room",
    "QueueOverCapability": "Its queue (or a parent) has no room left under its hard limit",
    "QueueOverDeserved": "Its queue already uses its deserved share, and other queues need the rest",
    "GangUnschedulable": "Not enough of its tasks can start together to reach the gang's minimum",
    "NodeFit": "No node has room for its tasks right now",
    "WaitingForPreemption": "Room is being freed by evicting other tasks; it starts once they are gone",
    "Unknown": "The scheduler did not record a specific reason",
    "": "No scheduling cycle has looked at this job yet",
}


def reason_label(code: str) -> str:
    """A short label for a reason code (the code itself when unknown)."""
    return REASON_LABELS.get(code or "", code)


def reason_sentence(code: str, message: str) -> str:
    """One sentence: what the code means, then the scheduler's own numbers."""
    head = REASON_SENTENCES.get(code or "", f"Reason {code}")
    return f"{head}: {message}" if message else f"{head}."


def failure_summary(node_failures: Mapping[str, int] | None) -> str:
    """`12 Insufficient cpu, 8 node(s) had untolerated taint ...`: biggest count first."""
    items = sorted((node_failures or {}).items(), key=lambda kv: (-int(kv[1]), kv[0]))
    return ", ".join(f"{n} {reason}" for reason, n in items)

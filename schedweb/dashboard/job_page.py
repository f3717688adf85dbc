"""What the job page shows for each state of a job, every figure from the cycle's committed data.

States: `waiting` (Pending/Inqueue with a task still without a node: why, NeverFits first),
`starting` (Pending/Inqueue, every task has a node: it turns Running at the next cycle),
`running` (Running/Unknown: where its tasks run, and why any of its tasks still waits),
`completed` and `cancelled` (how it ended); in every state, "why these nodes" when a cycle
recorded the node scores of its placements (schedweb.dashboard.why_nodes). The breadcrumbs
follow the state: waiting jobs sit under "Pending", the others under "Jobs" and their state group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count
from django.urls import reverse

from scheduler_core.framework.registry import plugin_classes
from schedweb.core.choices import (
    ALLOCATED_TASK_STATUSES,
    TERMINAL_JOB_PHASES,
    WAITING_JOB_PHASES,
    WAITING_TASK_STATUSES,
)
from schedweb.core.models import Job, JobPhase
from schedweb.dashboard import cycles
from schedweb.dashboard.job_reason import (
    NEVER_FITS,
    QUOTA_CODES,
    chain_levels,
    insufficient_rows,
    kind_label,
    never_fits_sentence,
    quota_sentence,
)
from schedweb.dashboard.pending import queue_position
from schedweb.dashboard.reason_text import failure_summary, reason_label, reason_sentence
from schedweb.dashboard.views.common import load_figures
from schedweb.dashboard.why_nodes import why_nodes
from schedweb.scheduling import reason_chain

STATE_TITLES = {
    "waiting": "Why is it waiting?",
    "starting": "Starting",
    "running": "Where it runs",
    "completed": "How it ended",
    "cancelled": "How it ended",
}


@dataclass
class Crumb:
    """One breadcrumb: its text and link (None: the current page)."""

    text: str
    url: str | None


def job_state(job: Job, statuses: dict[str, int]) -> str:
    """waiting / starting / running / completed / cancelled (see the module docstring)."""
    if job.phase == JobPhase.CANCELLED:
        return "cancelled"
    if job.phase == JobPhase.COMPLETED:
        return "completed"
    if job.phase in WAITING_JOB_PHASES:
        return "waiting" if any(statuses.get(s) for s in WAITING_TASK_STATUSES) else "starting"
    return "running"


def crumbs(job: Job, state: str) -> list[Crumb]:
    """Pending / job for a waiting job; Jobs / <state group> / job otherwise."""
    name = Crumb(f"{job.namespace}/{job.name}", None)
    if state == "waiting":
        return [Crumb("Pending jobs", reverse("dashboard:pending")), name]
    jobs = reverse("dashboard:jobs")
    group = {"starting": ("Waiting", "waiting"), "running": (job.phase, job.phase),
             "completed": ("Finished", "finished"), "cancelled": ("Finished", "finished")}[state]
    return [Crumb("Jobs", jobs), Crumb(group[0], f"{jobs}?state={group[1]}"), name]


def _limit_figure() -> str:
    """The figure a queue's room is measured against under the active configuration."""
    from schedweb.scheduling.cycle import active_conf

    # Each queue plugin declares its figure (Plugin.limit_figure); the real capability, where one
    # measures against it, is the tighter of the two.
    conf = active_conf()[1]
    figures = {getattr(plugin_classes().get(opt.name), "limit_figure", "") for tier in conf.tiers
               for opt in tier.plugins}
    return "real_capability" if "real_capability" in figures else "deserved"


def _placements(job: Job) -> list[dict[str, Any]]:
    """Per node: how many of the job's tasks hold it, by status (running jobs)."""
    rows = (job.tasks.filter(node__isnull=False).values("node__name", "status")
            .annotate(n=Count("id")).order_by("node__name", "status"))
    nodes: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = nodes.setdefault(row["node__name"], {"node": row["node__name"], "tasks": 0, "statuses": []})
        entry["tasks"] += row["n"]
        entry["statuses"].append(f"{row['n']} {row['status']}")
    return list(nodes.values())


def _cancelled_by(job: Job) -> str | None:
    """Who cancelled the job, from the audit log (None when not recorded)."""
    from schedweb.audit.models import AuditEntry

    entry = (AuditEntry.objects.filter(object_type="job", action="cancel", object_key=job.uid)
             .order_by("-timestamp").values_list("actor_name", flat=True).first())
    return entry


def _reason(job: Job, tree: Any) -> dict[str, Any]:
    """The reason block: label, sentence(s), NeverFits, quota figures, chain, timeline."""
    # The chain's figures are the newest cycle's (the row names its levels: reason_chain).
    details = reason_chain.fill(job.reason_details) if isinstance(job.reason_details, dict) else {}
    code = job.reason_code
    out: dict[str, Any] = {
        "code": code, "label": reason_label(code), "message": job.reason_message,
        "never_fits": None, "quota": None, "insufficient": [],
        "sentence": reason_sentence(code, job.reason_message),
        "failures": failure_summary(details.get("node_failures")),
        "failure_items": sorted((details.get("node_failures") or {}).items(), key=lambda kv: (-kv[1], kv[0])),
    }
    if code == NEVER_FITS and details.get("kind"):
        out["never_fits"] = {"sentence": never_fits_sentence(details, job.reason_message),
                             "kind": details["kind"], "kind_label": kind_label(details["kind"])}
    elif code in QUOTA_CODES:
        out["quota"] = quota_sentence(details)
        out["insufficient"] = insufficient_rows(details)
    out["chain"] = chain_levels(tree, job.queue.name, details, _limit_figure())
    return out


def _timeline(job: Job) -> list[dict[str, Any]]:
    """The reason spans, oldest first; the current span reads the job's current message (the
    history row keeps the message its span started with)."""
    rows = cycles.reason_history(job.id)
    for i, row in enumerate(rows):
        row["current"] = i == len(rows) - 1 and row["code"] == job.reason_code and bool(job.reason_code)
        row["shown"] = job.reason_message if row["current"] else row["message"]
    return rows


def job_context(job: Job) -> dict[str, Any]:
    """Everything job_detail.html needs for this job (see the module docstring)."""
    statuses = dict(job.tasks.values("status").annotate(n=Count("id")).order_by().values_list("status", "n"))
    ready = sum(n for s, n in statuses.items() if s in ALLOCATED_TASK_STATUSES)
    state = job_state(job, statuses)
    waiting_tasks = sum(statuses.get(s, 0) for s in WAITING_TASK_STATUSES)
    figures = load_figures()
    context: dict[str, Any] = {
        "page": "pending" if state == "waiting" else "jobs", "job": job, "state": state,
        "state_title": STATE_TITLES[state], "crumbs": crumbs(job, state),
        "waiting": state == "waiting", "waiting_tasks": waiting_tasks,
        "statuses": sorted(statuses.items()), "task_total": sum(statuses.values()),
        "ready": ready, "min_member": job.min_member,
        "gang_pct": min(100, round(100 * ready / job.min_member)) if job.min_member else 100,
        "dims": figures.tree.dims, "cycle_time": figures.tree.cycle_time,
        "history": _timeline(job),
        "position": 0, "position_of": 0, "placements": [], "cancelled_by": None, "ran_for": None,
        "why_nodes": why_nodes(job),  # the recorded node scores of its placements (any state)
    }
    # A reason is shown while some task waits (a running elastic job may have waiting tasks too).
    if job.reason_code and waiting_tasks and state in ("waiting", "running"):
        context["reason"] = _reason(job, figures.tree)
    if state == "waiting":
        context["position"], context["position_of"] = queue_position(job)
    if state in ("running", "starting"):
        context["placements"] = _placements(job)
    if state == "cancelled":
        context["cancelled_by"] = _cancelled_by(job)
    if job.phase in TERMINAL_JOB_PHASES and job.finished:
        context["ran_for"] = (job.finished - job.created).total_seconds()
    return context

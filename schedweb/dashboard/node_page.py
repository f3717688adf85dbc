"""One node's page: what it has, what its tasks hold, its tasks, and why waiting jobs pass it by.

"Why waiting jobs pass it by" is a static check made when the page is read, not a record of the
scheduler's tries: for the oldest waiting jobs (at most `WAITING_CHECKED`), each distinct shape of
their waiting tasks is tested against this node with the scheduler's own selector and toleration
rules (a nodeSelector is a plain label map; tolerations as in `scheduler_core.plugins.util.node_static`)
and the node's free room, and the failures are
counted by reason in Kubernetes' wording.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count

from scheduler_core.plugins.util.node_static import FILTERED_EFFECTS, taint_reason, tolerates
from schedweb.core.choices import NODE_BOUND_TASK_STATUSES, WAITING_JOB_PHASES, WAITING_TASK_STATUSES
from schedweb.core.models import Node, Task
from schedweb.dashboard.cluster import USAGE_FRESH
from schedweb.dashboard.units import add_into, dims_of, fmt, percent

TASKS_PER_PAGE = 50
WAITING_CHECKED = 200  # waiting jobs whose task shapes are checked against the node


@dataclass
class NodeFigures:
    """Allocatable, held by its tasks (stored units) and the share held, per dimension."""

    dims: list[str]
    allocatable: dict[str, float]
    allocated: dict[str, float]
    tasks: int

    def rows(self) -> list[dict[str, Any]]:
        """One row per dimension: label figures and the held percentage."""
        return [{"dim": d, "allocatable": fmt(d, self.allocatable.get(d)),
                 "allocated": fmt(d, self.allocated.get(d, 0.0)),
                 "pct": percent(self.allocated.get(d, 0.0), self.allocatable.get(d))}
                for d in self.dims]


def node_figures(node: Node) -> NodeFigures:
    """What the node's occupying tasks hold (one query grouped by identical requests)."""
    allocated: dict[str, float] = {}
    tasks = 0
    rows = (Task.objects.filter(node=node, status__in=NODE_BOUND_TASK_STATUSES)
            .values("request").annotate(n=Count("id")).order_by())
    for row in rows:
        add_into(allocated, row["request"], row["n"])
        tasks += row["n"]
    return NodeFigures(dims=dims_of([node.allocatable, allocated]), allocatable=dict(node.allocatable),
                       allocated=allocated, tasks=tasks)


def node_tasks(node: Node, page_number: Any) -> Page:
    """The tasks holding the node now, newest first, a page at a time, with their jobs."""
    tasks = (Task.objects.filter(node=node, status__in=NODE_BOUND_TASK_STATUSES)
             .select_related("job").order_by("-started", "-id")
             .only("name", "status", "request", "started", "job__namespace", "job__name", "job__id"))
    return Paginator(tasks, TASKS_PER_PAGE).get_page(page_number)


def waiting_failures(node: Node, figures: NodeFigures) -> dict[str, Any]:
    """{"checked": jobs checked, "fit": jobs with a task shape that fits now, "reasons": [(reason,
    jobs)], most frequent first}: each job counted once per reason."""
    shapes = (Task.objects.filter(job__phase__in=WAITING_JOB_PHASES, status__in=WAITING_TASK_STATUSES)
              .values("job_id", "request", "node_selector", "tolerations", "job__created")
              .order_by("job__created", "job_id").distinct())
    reasons: Counter[str] = Counter()
    jobs: dict[int, set[str]] = {}
    for shape in shapes.iterator(chunk_size=500):
        job_id = shape["job_id"]
        if job_id not in jobs:
            if len(jobs) >= WAITING_CHECKED:
                break
            jobs[job_id] = set()
        jobs[job_id].update(shape_failures(node, figures, shape))
    fit = 0
    for failed in jobs.values():
        reasons.update(failed)
        fit += not failed
    return {"checked": len(jobs), "fit": fit, "reasons": reasons.most_common(),
            "limit": WAITING_CHECKED}


def shape_failures(node: Node, figures: NodeFigures, shape: dict[str, Any]) -> list[str]:
    """Why a task of this shape cannot go to the node now (empty: it fits)."""
    if node.unschedulable:
        return ["node(s) were unschedulable"]
    failures = []
    pods = node.allocatable.get("pods")
    if pods is not None and figures.tasks >= pods:
        failures.append("Too many pods")
    labels = node.labels or {}
    if any(labels.get(k) != str(v) for k, v in (shape.get("node_selector") or {}).items()):
        failures.append("node(s) didn't match Pod's node affinity/selector")
    tolerations = shape.get("tolerations") or []
    for taint in node.taints or []:
        if taint.get("effect") in FILTERED_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            failures.append(taint_reason(taint))
            break
    for dim, amount in (shape.get("request") or {}).items():
        if dim == "pods":
            continue
        have = figures.allocatable.get(dim)
        if have is None or amount > have:
            failures.append(f"Insufficient {dim} (larger than the node)")
        elif amount > have - figures.allocated.get(dim, 0.0):
            failures.append(f"Insufficient {dim}")
    return failures


def usage_fresh(node: Node, now: Any) -> bool | None:
    """Whether the node's usage metrics are recent (None: never reported)."""
    if node.usage_updated is None:
        return None
    return now - node.usage_updated <= USAGE_FRESH

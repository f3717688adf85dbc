"""Pending jobs (filterable by queue and reason) and the job page: why it waits."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from schedweb.api.selectors import ALLOCATED_STATUSES, PENDING_JOB_PHASES
from schedweb.core.models import Job, Queue
from schedweb.dashboard import cycles
from schedweb.dashboard.pending import (
    REASON_LABELS,
    WAITING_TASK_STATUSES,
    failure_summary,
    pending_by_reason,
    pending_jobs,
    queue_position,
    reason_label,
    reason_sentence,
)
from schedweb.dashboard.selectors import QueueView
from schedweb.dashboard.views.common import load_figures

PAGE_SIZE = 500


@login_required
@require_GET
def pending_list(request: HttpRequest) -> HttpResponse:
    """Every waiting job with its dominant reason; ?queue=<name> (subtree) and ?reason=<code>."""
    queue_name = request.GET.get("queue") or ""
    reason = request.GET.get("reason")
    queue_ids = None
    if queue_name:
        # A parent queue filters to its whole subtree (jobs sit in leaves).
        parents = dict(Queue.objects.values_list("id", "parent_id"))
        names = dict(Queue.objects.values_list("name", "id"))
        root = names.get(queue_name)
        queue_ids = {qid for qid in parents if root is not None and _under(qid, root, parents)}
    jobs = list(pending_jobs(queue_ids=queue_ids, reason=reason)[:PAGE_SIZE + 1])
    context = {
        "page": "pending", "jobs": jobs[:PAGE_SIZE], "truncated": len(jobs) > PAGE_SIZE,
        "queue": queue_name, "reason": reason, "reasons": pending_by_reason(),
        "queue_names": list(Queue.objects.order_by("name").values_list("name", flat=True)),
    }
    template = "dashboard/partials/pending_rows.html" if request.htmx else "dashboard/pending.html"
    return render(request, template, context)


def _under(queue_id: int, root: int, parents: dict[int, int | None]) -> bool:
    seen = set()
    node: int | None = queue_id
    while node is not None and node not in seen:
        if node == root:
            return True
        seen.add(node)
        node = parents.get(node)
    return False


def chain_rows(chain: list[QueueView]) -> list[dict]:
    """Root-to-leaf levels with, per resource, allocated, deserved and the headroom left."""
    levels = []
    for view in chain:
        cells = []
        for bar in view.bars:
            headroom = None if bar.deserved is None else bar.deserved - bar.allocated
            cap_room = None if bar.frame is None else bar.frame - bar.allocated
            cells.append({"dim": bar.dim, "allocated": bar.allocated, "deserved": bar.deserved,
                          "headroom": headroom, "frame": bar.frame, "frame_kind": bar.frame_kind,
                          "cap_room": cap_room, "tight": headroom is not None and headroom <= 0})
        levels.append({"view": view, "cells": cells})
    return levels


@login_required
@require_GET
def job_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Reason sentence and timeline, queue chain with headroom, gang progress, node failures."""
    job = get_object_or_404(Job.objects.select_related("queue", "priority_class", "submitted_by"),
                            namespace=namespace, name=name)
    statuses = dict(job.tasks.values("status").annotate(n=Count("id")).order_by().values_list("status", "n"))
    ready = sum(n for s, n in statuses.items() if s in ALLOCATED_STATUSES)
    figures = load_figures()
    details = job.reason_details or {}
    waiting = job.phase in PENDING_JOB_PHASES and any(statuses.get(s) for s in WAITING_TASK_STATUSES)
    position, of = queue_position(job) if waiting else (0, 0)
    return render(request, "dashboard/job_detail.html", {
        "page": "pending", "job": job, "waiting": waiting,
        "reason_label": reason_label(job.reason_code),
        "reason_sentence": reason_sentence(job.reason_code, job.reason_message),
        "history": cycles.reason_history(job.id),
        "chain": chain_rows(figures.tree.chain(job.queue.name)),
        "dims": figures.tree.dims,
        "statuses": sorted(statuses.items()), "task_total": sum(statuses.values()),
        "ready": ready, "min_member": job.min_member,
        "gang_pct": min(100, round(100 * ready / job.min_member)) if job.min_member else 100,
        "failures": failure_summary(details.get("node_failures")),
        "failure_items": sorted((details.get("node_failures") or {}).items(), key=lambda kv: (-kv[1], kv[0])),
        "position": position, "position_of": of, "labels": REASON_LABELS,
    })

"""Pending jobs (NeverFits first, filterable by queue and reason) and the job page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from schedweb.core.models import Job, Queue
from schedweb.dashboard.estimates import job_estimate, legend, with_estimates
from schedweb.dashboard.job_page import job_context
from schedweb.dashboard.pending import pending_by_reason, pending_jobs
from schedweb.dashboard.task_table import outcome, task_page

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
    jobs = with_estimates(pending_jobs(queue_ids=queue_ids, reason=reason)[:PAGE_SIZE + 1])
    context = {
        "page": "pending", "jobs": jobs[:PAGE_SIZE], "truncated": len(jobs) > PAGE_SIZE,
        "queue": queue_name, "reason": reason, "reasons": pending_by_reason(),
        "queue_names": list(Queue.objects.order_by("name").values_list("name", flat=True)),
        "estimate_legend": legend(),
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


@login_required
@require_GET
def job_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """The job in its state (schedweb.dashboard.job_page): why it waits (NeverFits first), where it
    runs, or how it ended; the queue chain and every figure from the cycle's committed data."""
    job = get_object_or_404(Job.objects.select_related("queue", "priority_class", "submitted_by"),
                            namespace=namespace, name=name)
    context = job_context(job)
    context["can_cancel"] = _can_cancel(request, job)
    context["task_page"], context["task_rows"] = task_page(job, request.GET.get("tasks"))
    if context["state"] in ("completed", "cancelled"):
        context["outcome"] = outcome(job)
    if context["state"] == "waiting":  # issue 20: when it is expected to start (the stored forecast)
        context.update(estimate=job_estimate(job), estimate_legend=legend())
    return render(request, "dashboard/job_detail.html", context)


@login_required
@require_GET
def job_by_id(request: HttpRequest, pk: int) -> HttpResponse:
    """/jobs/<id>/ (the id the API and schedctl print): the job's page under its namespace/name."""
    job = get_object_or_404(Job.objects.only("namespace", "name"), pk=pk)
    return redirect("dashboard:job", namespace=job.namespace, name=job.name)


def _can_cancel(request: HttpRequest, job: Job) -> bool:
    """The cancel rule of the job actions partial (schedweb.dashboard.views.job_lists)."""
    try:
        from schedweb.dashboard.views.job_lists import can_cancel
    except ImportError:  # the job lists module ships separately; without it, no cancel button
        return False
    return can_cancel(request, job)

"""Overview: cluster totals and utilisation, cycle health, pending by reason, borrowing/starving."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from schedweb.dashboard import cycles
from schedweb.dashboard.pending import pending_by_reason
from schedweb.dashboard.statements import borrowing, starving
from schedweb.dashboard.views.common import load_figures


def overview_context() -> dict:
    """Everything the overview shows (also its refreshing fragment)."""
    figures = load_figures()
    cluster, tree = figures.cluster, figures.tree
    utilisation = [{"dim": d, "allocated": cluster.allocated.get(d, 0.0), "total": cluster.total.get(d, 0.0),
                    "percent": cluster.utilisation(d)} for d in cluster.dims]
    by_reason = pending_by_reason()
    return {
        "cluster": cluster,
        "utilisation": utilisation,
        "health": cycles.cycle_health(),
        "by_reason": by_reason,
        "pending_total": sum(n for _, _, n in by_reason),
        # Sentences generated from the same figures as the tree (schedweb.dashboard.statements).
        "borrowing": borrowing(tree),
        "starving": starving(tree),
        "cycle_time": tree.cycle_time,
        "has_samples": tree.has_samples,
        "dims": tree.dims,
    }


@login_required
@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    """The landing page; htmx polls return only the refreshed body."""
    template = "dashboard/partials/overview_body.html" if request.htmx else "dashboard/overview.html"
    return render(request, template, {**overview_context(), "page": "overview"})

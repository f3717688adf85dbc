"""My queues: what a team lead administers or submits to, their share and their waiting jobs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from schedweb.dashboard.pending import pending_jobs
from schedweb.dashboard.selectors import share_percent
from schedweb.dashboard.views.common import access, load_figures


@login_required
@require_GET
def my_queues(request: HttpRequest) -> HttpResponse:
    """Queues the user may submit to (admins included, ACLs inherited as in the API)."""
    acl = access(request)
    figures = load_figures()
    mine = [v for v in figures.tree.rows if acl.can_submit(v.queue.id)]
    rows = [{"view": v, "admin": acl.can_admin(v.queue.id),
             "shares": [(d, share_percent(v, d)) for d in figures.tree.dims]} for v in mine]
    leaf_ids = [v.queue.id for v in mine if v.is_leaf]
    return render(request, "dashboard/my_queues.html", {
        "page": "mine", "rows": rows, "dims": figures.tree.dims, "is_staff": acl.is_staff,
        "jobs": list(pending_jobs(queue_ids=leaf_ids)[:500]) if leaf_ids else [],
    })

"""Audit log page: who changed which queue, node, quota or config, when, with the field diff."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.core.audit_selectors import entries_for
from schedweb.dashboard.audit_display import diff_rows

PAGE_SIZE = 50
FILTERS = ("object_type", "action", "queue", "actor", "object_key")


@login_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    """Entries the user may read (staff: all; queue admins: their queues and jobs), newest first.

    Same scope and filters as GET /api/v1/audit/ (schedweb.core.audit_selectors.entries_for).
    """
    filters = {name: (request.GET.get(name) or "").strip() for name in FILTERS}
    if filters["object_type"] not in AuditObjectType.values:
        filters["object_type"] = ""
    if filters["action"] not in AuditAction.values:
        filters["action"] = ""
    entries = entries_for(request.user, **{k: v or None for k, v in filters.items()})
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    # DiffRows in human units: one per changed field or resource dimension, a line diff for texts.
    rows = [{"entry": e, "diff": diff_rows(e.object_type, e.diff)} for e in page.object_list]
    query = urlencode({k: v for k, v in filters.items() if v})  # kept by the pager links
    return render(request, "dashboard/audit.html", {
        "page": "audit", "rows": rows, "page_obj": page, "filters": filters, "query": query,
        "object_types": AuditObjectType.choices, "actions": AuditAction.choices,
        "may_see_all": request.user.is_staff or request.user.is_superuser,
    })

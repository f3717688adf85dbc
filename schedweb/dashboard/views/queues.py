"""Queue tree, queue page, its chart JSON, and the admin-only edit / open / close actions."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from schedweb.core import services
from schedweb.core.choices import JOB_PHASES, TERMINAL_JOB_PHASES
from schedweb.core.models import Job, Queue
from schedweb.dashboard.charts import DEFAULT_RANGE, RANGES, dim_key, queue_charts
from schedweb.dashboard.conf_fields import active_ignored_fields
from schedweb.dashboard.explain import explain
from schedweb.dashboard.forms import QueueEditForm
from schedweb.dashboard.pending import pending_jobs
from schedweb.dashboard.queue_previews import present_preview
from schedweb.dashboard.tree_html import tree_rows_html
from schedweb.dashboard.units import fmt_map
from schedweb.dashboard.views.common import Figures, access, load_figures
from schedweb.scheduling.queue_preview import preview_queue_change

JOBS_SHOWN = 200  # per queue page; the pending page lists them all


@login_required
@require_GET
def queue_tree(request: HttpRequest) -> HttpResponse:
    """The collapsible, searchable hierarchy (rendered flat, nested with <details>)."""
    figures = load_figures()
    return render(request, "dashboard/queue_tree.html", {
        "page": "queues", "tree_html": tree_rows_html(figures.tree.rows), "tree": figures.tree,
        "count": len(figures.tree.rows)})


def _queue_view(figures: Figures, name: str):
    view = figures.tree.by_name.get(name)
    if view is None:
        raise Http404(f"No queue named {name}.")
    return view


def _page_context(request: HttpRequest, figures: Figures, name: str,
                  form: QueueEditForm | None = None) -> dict:
    view = _queue_view(figures, name)
    can_admin = access(request).can_admin(view.queue.id)
    ignored = active_ignored_fields(is_leaf=view.is_leaf)
    if can_admin and form is None:
        form = QueueEditForm(queue=view.queue, ignored=ignored, access=access(request))
    unfinished = Job.objects.filter(queue=view.queue).exclude(phase__in=TERMINAL_JOB_PHASES)
    jobs = unfinished.select_related("priority_class").order_by("created", "id")[:JOBS_SHOWN]
    waiting = list(pending_jobs(queue_ids=[view.queue.id]))
    range_key = request.GET.get("range", DEFAULT_RANGE)
    return {
        "page": "queues", "view": view, "tree": figures.tree,
        "chain": figures.tree.chain(name),
        "children": [figures.tree.by_name[c] for c in view.child_names],
        "jobs": jobs, "waiting": waiting, "jobs_count": unfinished.count(), "jobs_shown": JOBS_SHOWN,
        "jobs_url": _job_list_url(view.queue.name),
        "explanation": explain(view.explanation, view.name, view.request if view.explanation else None),
        "settings": _settings(view.queue, ignored),
        "can_admin": can_admin, "form": form if can_admin else None,
        "chart_dims": [(d, dim_key(d)) for d in figures.tree.dims],
        "ranges": list(RANGES), "range": range_key if range_key in RANGES else DEFAULT_RANGE,
    }


def _job_list_url(queue_name: str) -> str:
    """The job list filtered to this queue's unfinished jobs (every phase but the terminal ones)."""
    states = [p for p in JOB_PHASES if p not in TERMINAL_JOB_PHASES]
    query = urlencode([("queue", queue_name)] + [("state", p) for p in states])
    return f"{reverse('dashboard:jobs')}?{query}"


def _settings(queue: Queue, ignored: dict[str, str]) -> list[dict]:
    """The queue's settings as the page lists them, each with why the active configuration ignores
    it (schedweb.dashboard.conf_fields; empty when it is used)."""
    values = {
        "weight": str(queue.weight), "priority": str(queue.priority),
        "reclaimable": "yes" if queue.reclaimable else "no",
        "capability": fmt_map(queue.capability), "deserved": fmt_map(queue.deserved),
        "guarantee": fmt_map(queue.guarantee),
    }
    return [{"field": f, "value": v, "ignored": ignored.get(f, "")} for f, v in values.items()]


@login_required
@require_GET
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    """Charts, children, jobs and the fair-share explanation; the edit form for queue admins."""
    return render(request, "dashboard/queue_detail.html", _page_context(request, load_figures(), name))


@login_required
@require_GET
def queue_chart_data(request: HttpRequest, name: str) -> JsonResponse:
    """Plotly figures (current bars, history lines) for the queue page's charts."""
    figures = load_figures()
    view = _queue_view(figures, name)
    return JsonResponse(queue_charts(view, figures.tree.dims, request.GET.get("range", DEFAULT_RANGE)))


def _admin_queue(request: HttpRequest, name: str) -> Queue:
    queue = Queue.objects.filter(name=name).first()
    if queue is None:
        raise Http404(f"No queue named {name}.")
    if not access(request).can_admin(queue.id):
        raise PermissionDenied(f"Only admins of queue {name} or its ancestors may change it.")
    return queue


@login_required
@require_POST
def queue_edit(request: HttpRequest, name: str) -> HttpResponse:
    """Save the edit form through queue_update; on errors show the page again with them."""
    queue = _admin_queue(request, name)
    queue_is_leaf = not Queue.objects.filter(parent=queue).exists()
    form = QueueEditForm(request.POST, queue=queue, ignored=active_ignored_fields(is_leaf=queue_is_leaf),
                         access=access(request))
    if form.is_valid():
        messages.success(request, f"Queue {name} saved; the next scheduling cycle uses the new settings.")
        return redirect("dashboard:queue", name=name)
    context = _page_context(request, load_figures(), name, form=form)
    return render(request, "dashboard/queue_detail.html", context, status=400)


@login_required
@require_POST
def queue_preview(request: HttpRequest, name: str) -> HttpResponse:
    """The edit form's Preview: what its values would do in the next cycle, nothing saved
    (schedweb.scheduling.queue_preview runs the form's own write in a rolled-back savepoint).
    The form comes back as posted with the preview below it: the whole page, or for htmx only
    the edit section; 400 when the form shows errors (its fields, or limits the change breaks)."""
    queue = _admin_queue(request, name)
    queue_is_leaf = not Queue.objects.filter(parent=queue).exists()
    form = QueueEditForm(request.POST, queue=queue, ignored=active_ignored_fields(is_leaf=queue_is_leaf),
                         commit=False, access=access(request))
    preview = None
    if form.is_valid():
        answer = preview_queue_change(queue, form.apply)
        form.add_violations(answer["violations"])
        preview = present_preview(answer)
    status = 400 if form.errors else 200
    if request.htmx:
        return render(request, "dashboard/partials/queue_edit.html",
                      {"view": {"name": name}, "form": form, "preview": preview}, status=status)
    context = _page_context(request, load_figures(), name, form=form)
    return render(request, "dashboard/queue_detail.html", {**context, "preview": preview}, status=status)


@login_required
@require_POST
def queue_state(request: HttpRequest, name: str) -> HttpResponse:
    """Open or close the queue (closing a busy queue makes it Closing)."""
    queue = _admin_queue(request, name)
    wanted = {"open": "Open", "close": "Closed"}.get(request.POST.get("state", ""))
    if wanted is None:
        messages.error(request, "Unknown state change.")
    else:
        try:
            queue = services.queue_set_state(queue=queue, state=wanted)
            messages.success(request, f"Queue {name} is now {queue.state}.")
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
    return redirect("dashboard:queue", name=name)

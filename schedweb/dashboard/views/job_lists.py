"""Job lists (every state, filtered, sorted, paged), "My jobs", and cancelling a job.

The filters are the API's (schedweb.core.filtersets.JobFilterSet, same parameter names as
GET /api/v1/jobs/), and so is the cancel rule (QueueAccess.can_cancel: the submitter, or an admin
of the job's queue or an ancestor) and the write (schedweb.core.services.job_cancel).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from schedweb.core import services
from schedweb.core.choices import (
    JOB_PHASES,
    JOB_STATE_GROUPS,
    TERMINAL_JOB_PHASES,
)
from schedweb.core.filtersets import JobFilterSet
from schedweb.core.models import Job, Queue
from schedweb.dashboard import job_csv
from schedweb.dashboard.estimates import legend, with_estimates
from schedweb.dashboard.reason_text import REASON_LABELS, reason_label
from schedweb.dashboard.task_table import with_task_counts
from schedweb.dashboard.views.common import access

PAGE_SIZE = 50
# The filter parameters, named as the API names them (GET /api/v1/jobs/?...).
FILTERS = ("search", "state", "queue", "namespace", "reason_code", "submitted_by")
# ?ordering= values (a leading "-" reverses), a subset of the API's ordering fields; ties by id.
SORTS = {"created": "Submitted", "namespace": "Namespace", "name": "Name", "queue__name": "Queue",
         "phase": "State"}
DEFAULT_ORDERING = "-created"
STATE_LABELS = {"waiting": "Waiting (Pending or Inqueue)", "finished": "Finished (Completed or Cancelled)",
                "suspended": "Suspended"}


def can_cancel(request: HttpRequest, job: Job) -> bool:
    """Whether this user may cancel this job now: the API's rule, and the job not finished."""
    return job.phase not in TERMINAL_JOB_PHASES and access(request).can_cancel(job)


@dataclass
class Column:
    """A sortable column header: its label and the link that sorts by it (or reverses the sort)."""

    key: str
    label: str
    url: str
    arrow: str


def _ordering(request: HttpRequest) -> tuple[str, str | None]:
    """(ordering, error): an unknown value falls back to the default with a message."""
    value = (request.GET.get("ordering") or "").strip()
    if not value:
        return DEFAULT_ORDERING, None
    if value.removeprefix("-") in SORTS:
        return value, None
    return DEFAULT_ORDERING, (f"ordering: unknown sort {value!r}; one of {', '.join(SORTS)} "
                              "(a leading - reverses).")


def _order(queryset: QuerySet, ordering: str) -> QuerySet:
    desc = ordering.startswith("-")
    return queryset.order_by(ordering, "-id" if desc else "id")


def _columns(params: dict[str, str], ordering: str) -> dict[str, Column]:
    columns = {}
    for key, label in SORTS.items():
        current = ordering.removeprefix("-") == key
        wanted = f"-{key}" if current and not ordering.startswith("-") else key
        if not current and key == "created":
            wanted = "-created"  # newest first is what one wants first
        query = urlencode({**params, "ordering": wanted})
        arrow = ("\u25bc" if ordering.startswith("-") else "\u25b2") if current else ""
        columns[key] = Column(key=key, label=label, url=f"?{query}", arrow=arrow)
    return columns


def _state_tabs(queryset: QuerySet, params: dict[str, str]) -> list[dict]:
    """The state shortcuts over the other filters' result: all, waiting, then each later phase,
    each with its job count (one grouped query) and its link; Unknown and Suspended only when some
    job is."""
    by_phase = dict(queryset.order_by().values("phase").annotate(n=Count("id")).values_list("phase", "n"))
    tabs = [("", "All", sum(by_phase.values())),
            ("waiting", "Waiting", sum(by_phase.get(p, 0) for p in JOB_STATE_GROUPS["waiting"]))]
    # Unknown and Aborted (suspended) only when some job is.
    tabs += [(p, "Suspended" if p == "Aborted" else p, by_phase.get(p, 0)) for p in JOB_PHASES
             if p not in JOB_STATE_GROUPS["waiting"] and (p not in ("Unknown", "Aborted") or by_phase.get(p))]
    others = {k: v for k, v in params.items() if k != "state"}
    return [{"value": value, "label": label, "n": n, "active": params.get("state", "") == value,
             "url": "?" + urlencode({**others, **({"state": value} if value else {})})}
            for value, label, n in tabs]


def _page_links(params: dict[str, str], ordering: str, page: Page) -> dict[str, str]:
    base = {**params, **({"ordering": ordering} if ordering != DEFAULT_ORDERING else {})}
    links = {}
    if page.has_previous():
        links["previous"] = "?" + urlencode({**base, "page": page.previous_page_number()})
    if page.has_next():
        links["next"] = "?" + urlencode({**base, "page": page.next_page_number()})
    return links


def _api_url(params: dict[str, str], ordering: str, page: Page) -> str:
    """The same page of the same list in the API (its filters and ordering are the same)."""
    query = {**params, "ordering": ordering, "limit": PAGE_SIZE, "offset": (page.number - 1) * PAGE_SIZE}
    return reverse("api:job-list") + "?" + urlencode(query)


@dataclass
class Listed:
    """A job list as the query asks for it: the filtered, sorted rows and what the page says of them."""

    filterset: JobFilterSet
    rows: QuerySet
    errors: list[str]
    params: dict[str, str]
    ordering: str


def _listed(request: HttpRequest, base: QuerySet, *, mine: bool) -> Listed:
    """The query's filters (the API's filterset) and ordering applied to `base`."""
    names = [f for f in FILTERS if not (mine and f == "submitted_by")]
    data = request.GET.copy()
    if mine:
        data.pop("submitted_by", None)  # my jobs are mine, whatever the query says
    filterset = JobFilterSet(data, queryset=base)
    errors = [f"{field}: {message}" for field, msgs in filterset.errors.items() for message in msgs]
    # A filter that names nothing (state=bogus, an unknown user) matches nothing, and says why.
    rows = base.none() if errors else filterset.qs
    ordering, sort_error = _ordering(request)
    if sort_error:
        errors.append(sort_error)
    params = {f: (request.GET.get(f) or "").strip() for f in names}
    params = {f: v for f, v in params.items() if v and f not in filterset.errors}
    return Listed(filterset=filterset, rows=_order(rows, ordering), errors=errors, params=params,
                  ordering=ordering)


def _list_context(request: HttpRequest, base: QuerySet, *, mine: bool) -> dict:
    """Everything jobs.html / my_jobs.html show: filters, state tabs, one sorted page of jobs."""
    listed = _listed(request, base, mine=mine)
    filterset, errors, params, ordering = listed.filterset, listed.errors, listed.params, listed.ordering
    data = request.GET.copy()
    if mine:
        data.pop("submitted_by", None)
    data.pop("state", None)
    tabs = JobFilterSet(data, queryset=base)  # the tabs count by state what the other filters keep
    page = Paginator(listed.rows, PAGE_SIZE).get_page(request.GET.get("page"))
    jobs = with_estimates(with_task_counts(list(page.object_list)))  # the page's estimates at once
    for job in jobs:
        job.can_cancel = can_cancel(request, job)
    return {
        "jobs": jobs, "page_obj": page, "errors": errors, "params": params, "ordering": ordering,
        "columns": _columns(params, ordering), "page_links": _page_links(params, ordering, page),
        "state_tabs": _state_tabs(base.none() if tabs.errors else tabs.qs, params),
        "states": [(s, STATE_LABELS[s]) for s in JOB_STATE_GROUPS] + [(p, p) for p in JOB_PHASES],
        "queue_names": _leaf_queue_names(),
        "namespaces": list(Job.objects.order_by("namespace").values_list("namespace", flat=True)
                           .distinct()[:500]),
        "reasons": _reason_options(),
        "api_url": _api_url(params, ordering, page), "mine": mine,
        "csv_url": "?" + urlencode({**params, "ordering": ordering, "format": "csv"}),
        "estimate_legend": legend() if any(job.estimate for job in jobs) else [],
        "filtered": bool(params or filterset.errors),
    }


def _reason_options() -> list[tuple[str, str]]:
    """(code, label) of the reason codes the filterset accepts (all labelled ones if it takes any)."""
    field = JobFilterSet.base_filters["reason_code"].field
    codes = [code for code, _ in getattr(field, "choices", ()) if code] or [c for c in REASON_LABELS if c]
    return [(code, reason_label(code)) for code in codes]


def _leaf_queue_names() -> list[str]:
    """Queues that hold jobs (leaves; a job's queue is always a leaf), by name."""
    parents = set(Queue.objects.filter(parent__isnull=False).values_list("parent_id", flat=True))
    queues = Queue.objects.order_by("name").values_list("id", "name")
    return [name for qid, name in queues if qid not in parents]


def _jobs() -> QuerySet:
    return Job.objects.select_related("queue", "submitted_by")


@login_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    """Every job in any state; filters queue, namespace, state, reason, submitter and text."""
    if request.GET.get("format") == "csv":
        return job_csv.response(_listed(request, _jobs(), mine=False).rows, "jobs.csv")
    context = _list_context(request, _jobs(), mine=False)
    return render(request, "dashboard/jobs.html", {**context, "page": "jobs"})


@login_required
@require_GET
def my_jobs(request: HttpRequest) -> HttpResponse:
    """The jobs the signed-in user submitted (through the API, a manifest or schedctl)."""
    mine = _jobs().filter(submitted_by=request.user)
    if request.GET.get("format") == "csv":
        return job_csv.response(_listed(request, mine, mine=True).rows, "my-jobs.csv")
    context = _list_context(request, mine, mine=True)
    return render(request, "dashboard/my_jobs.html", {**context, "page": "my-jobs"})


def _back(request: HttpRequest, job: Job) -> str:
    """Where to go after a cancel: the page that asked (same site only), else the job page."""
    target = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                       require_https=request.is_secure()):
        return target
    return reverse("dashboard:job", args=[job.namespace, job.name])


@login_required
@require_POST
def job_cancel(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Cancel the job after the confirmation step (confirm=yes), with the API's ACL and service."""
    job = get_object_or_404(Job.objects.select_related("queue"), namespace=namespace, name=name)
    if not access(request).can_cancel(job):
        raise PermissionDenied("Only the submitter or an admin of the job's queue may cancel it.")
    if request.POST.get("confirm") != "yes":
        messages.error(request, f"Job {job.uid} was not cancelled: the cancellation was not confirmed.")
        return redirect(_back(request, job))
    try:
        job = services.job_cancel(job=job, actor=request.user)
    except ValidationError as exc:
        messages.error(request, f"Job {job.uid} was not cancelled: {'; '.join(exc.messages)}")
    else:
        messages.success(request, f"Job {job.uid} is {job.phase}: its waiting tasks failed and "
                                  "its running tasks are being released.")
    return redirect(_back(request, job))

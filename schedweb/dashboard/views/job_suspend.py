"""Suspend and resume a job from the dashboard (after a confirmation step), with the API's rule
(QueueAccess.can_cancel) and the core services, as the cancel button does."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from schedweb.core.job_services import job_resume as resume_service
from schedweb.core.job_services import job_suspend as suspend_service
from schedweb.core.models import Job
from schedweb.dashboard.views.common import access
from schedweb.dashboard.views.job_lists import _back

_DONE = {"suspend": "is suspended: its running tasks are being released; it is not scheduled until "
                    "resumed.",
         "resume": "is resumed: it waits again and the next cycle schedules it as a new gang."}


def _change(request: HttpRequest, namespace: str, name: str, verb: str, service) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("queue"), namespace=namespace, name=name)
    if not access(request).can_cancel(job):
        raise PermissionDenied(f"Only the submitter or an admin of the job's queue may {verb} it.")
    if request.POST.get("confirm") != "yes":
        messages.error(request, f"Job {job.uid} was not {verb}d: it was not confirmed.")
        return redirect(_back(request, job))
    try:
        job = service(job=job, actor=request.user)
    except ValidationError as exc:
        messages.error(request, f"Job {job.uid} was not {verb}d: {'; '.join(exc.messages)}")
    else:
        messages.success(request, f"Job {job.uid} {_DONE[verb]}")
    return redirect(_back(request, job))


@login_required
@require_POST
def job_suspend(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Suspend the job after the confirmation step (confirm=yes)."""
    return _change(request, namespace, name, "suspend", suspend_service)


@login_required
@require_POST
def job_resume(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """Resume the suspended job after the confirmation step (confirm=yes)."""
    return _change(request, namespace, name, "resume", resume_service)

"""GET /metrics: the Prometheus text format, as the newest cycle rendered it
(schedweb.scheduling.metrics_body: one query per scrape), or rendered live from SchedulerCollector
when no fresh render is stored."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from schedweb.scheduling import metrics_body


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The scheduler's metrics in the Prometheus exposition format (public, like Volcano's)."""
    return HttpResponse(metrics_body.scrape(), content_type=CONTENT_TYPE_LATEST)

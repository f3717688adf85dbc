"""GET /metrics: Prometheus text format from SchedulerCollector (a private registry per process),
written by metrics_text (the bytes of prometheus_client's generate_latest, faster)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from schedweb.scheduling.metrics import SchedulerCollector
from schedweb.scheduling.metrics_text import exposition

REGISTRY = CollectorRegistry(auto_describe=True)
REGISTRY.register(SchedulerCollector())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The scheduler's metrics in the Prometheus exposition format (public, like Volcano's)."""
    return HttpResponse(exposition(REGISTRY.collect()), content_type=CONTENT_TYPE_LATEST)

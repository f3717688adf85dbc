"""GET /metrics: Prometheus text format from SchedulerCollector (a private registry per process)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from schedweb.scheduling.metrics import SchedulerCollector

REGISTRY = CollectorRegistry(auto_describe=True)
REGISTRY.register(SchedulerCollector())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The scheduler's metrics in the Prometheus exposition format (public, like Volcano's)."""
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)

"""GET /metrics: the Prometheus text format, as the unsharded instance's newest cycle rendered it
(schedweb.scheduling.metrics_body: one query per scrape), or rendered live when no fresh render is
stored; `?shard=NAME`: that shard's instance's body (404 when no NodeShard has that name)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from schedweb.core.models import NodeShard
from schedweb.scheduling import metrics_body


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The scheduler's metrics in the Prometheus exposition format (public, like Volcano's): the
    unsharded instance's, or with `?shard=NAME` that shard's instance's."""
    shard = request.GET.get("shard", "")
    if shard and not NodeShard.objects.filter(name=shard).exists():
        raise Http404(f"no NodeShard named {shard!r}")
    return HttpResponse(metrics_body.scrape(shard), content_type=CONTENT_TYPE_LATEST)

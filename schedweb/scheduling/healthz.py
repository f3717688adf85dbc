"""GET /healthz: public liveness/readiness probe (database and scheduler state)."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from schedweb.scheduling.health import scheduler_health

logger = logging.getLogger(__name__)


def scheduler_state() -> dict:
    """The scheduler's own health dict (schedweb.scheduling.health), {"state": "unknown"} until the
    loop reports one, {"state": "error"} when reading it fails."""
    try:
        return dict(scheduler_health())
    except Exception:  # the probe must answer even when the scheduler part is broken
        logger.exception("scheduler_health failed")
        return {"state": "error"}


def database_ok() -> bool:
    """True when a trivial query succeeds."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True
    except Exception:
        logger.exception("healthz: database unreachable")
        return False


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 {"status": "ok"|"degraded", "database": "ok", "scheduler": {...}}; 503 with status
    "error" when the database is unreachable, "down" when no cycle has succeeded for five periods.
    `?live=1` (liveness of the web process: a container healthcheck that other services wait on)
    answers 200 with status "down" instead, so the web server can be up while its scheduler is not."""
    if not database_ok():
        return JsonResponse({"status": "error", "database": "error", "scheduler": {"state": "unknown"}},
                            status=503)
    scheduler = scheduler_state()
    state = scheduler.get("state")
    if state == "down":  # nothing is being scheduled: take the instance out of rotation
        live = request.GET.get("live") == "1"
        return JsonResponse({"status": "down", "database": "ok", "scheduler": scheduler},
                            status=200 if live else 503)
    # Cycles that keep failing, or a late one, degrade the service, still 200.
    status = "degraded" if state == "degraded" else "ok"
    return JsonResponse({"status": status, "database": "ok", "scheduler": scheduler})

"""GET /healthz: public liveness/readiness probe (database and scheduler state)."""

from __future__ import annotations

import importlib
import importlib.util
import logging

from django.apps import apps
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)

# Extension point: schedweb.scheduling may provide health.scheduler_health() -> dict.
SCHEDULER_HEALTH_MODULE = "schedweb.scheduling.health"


def scheduler_state() -> dict:
    """The scheduler's own health dict, or {"state": "unknown"} until the loop reports one."""
    if apps.is_installed("schedweb.scheduling") and importlib.util.find_spec(SCHEDULER_HEALTH_MODULE):
        try:
            return dict(importlib.import_module(SCHEDULER_HEALTH_MODULE).scheduler_health())
        except Exception:  # the probe must answer even when the scheduler part is broken
            logger.exception("scheduler_health failed")
            return {"state": "error"}
    return {"state": "unknown"}


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
    """200 {"status": "ok", "database": "ok", "scheduler": {...}}; 503 with status "error"
    when the database is unreachable."""
    if not database_ok():
        return JsonResponse({"status": "error", "database": "error", "scheduler": {"state": "unknown"}},
                            status=503)
    scheduler = scheduler_state()
    # A stalled scheduler loop (no cycle for five periods) degrades the service, still 200.
    status = "degraded" if scheduler.get("state") == "degraded" else "ok"
    return JsonResponse({"status": status, "database": "ok", "scheduler": scheduler})

"""schedweb: a Django web app and REST API over the pure-Python scheduler in scheduler_core."""

from __future__ import annotations

# `celery -A schedweb` finds the app here.
from schedweb.celery import app as celery_app  # noqa: F401

__all__ = ["celery_app"]

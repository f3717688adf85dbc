"""schedweb: a Django web app and REST API over the pure-Python scheduler in scheduler_core."""

from __future__ import annotations

import importlib.util

# `celery -A schedweb` finds the app here once schedweb/celery.py (scheduling helper) exists;
# guarded so the project imports before that module lands.
if importlib.util.find_spec("schedweb.celery") is not None:  # pragma: no branch
    from schedweb.celery import app as celery_app  # noqa: F401

    __all__ = ["celery_app"]

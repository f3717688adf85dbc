"""schedweb: a Django web app and REST API over the pure-Python scheduler in scheduler_core."""

from __future__ import annotations

import importlib.util

# `celery -A schedweb` finds the app here. The schedctl command line also lives in this package
# and is installed on laptops with only PyYAML: there celery is absent and must not be imported.
if importlib.util.find_spec("celery") is not None:  # pragma: no branch
    from schedweb.celery import app as celery_app  # noqa: F401

    __all__ = ["celery_app"]

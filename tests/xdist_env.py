"""`make test` runs the suite on two pytest-xdist workers; this plugin (loaded with `-p`, before
Django reads its settings) gives each worker its own Redis database, as pytest-django gives each
its own PostgreSQL test database (test_<name>_gw0, ...). Without it, one worker's `cache.clear()`
or throttle reset would reach into the other's test.

Worker gwK uses database (N - K) of REDIS_URL's N: 15 and 14 for `make test`'s default 15, clear of
`make soak`'s 12 and `make bench`'s 11.
"""

from __future__ import annotations

import os


def _worker_redis_url(url: str, worker: str) -> str:
    """REDIS_URL for xdist worker `worker` ("gw0", "gw1", ...)."""
    base, sep, db = url.rpartition("/")
    index = int(worker.removeprefix("gw"))
    if not sep or not db.isdigit() or base.endswith("/"):  # no database number: start from 15
        base, db = url.rstrip("/"), "15"
    return f"{base}/{int(db) - index}"


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"], _worker)

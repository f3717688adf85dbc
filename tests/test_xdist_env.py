"""Each xdist worker's Redis database (tests/xdist_env.py): distinct per worker, below REDIS_URL's."""

from __future__ import annotations

import pytest

from tests.xdist_env import _worker_redis_url


@pytest.mark.parametrize(("url", "worker", "expected"), [
    ("redis://127.0.0.1:6379/15", "gw0", "redis://127.0.0.1:6379/15"),
    ("redis://127.0.0.1:6379/15", "gw1", "redis://127.0.0.1:6379/14"),
    ("redis://127.0.0.1:6379", "gw1", "redis://127.0.0.1:6379/14"),
    ("redis://127.0.0.1:6379/", "gw0", "redis://127.0.0.1:6379/15"),
])
def test_worker_redis_url(url, worker, expected):
    assert _worker_redis_url(url, worker) == expected


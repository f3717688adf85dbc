"""The default cache in deployments: Redis, falling back to this process's memory while Redis is down.

Everything the web tier keeps in the cache is soft state: DRF's request throttles, the login
throttle's failure counts, the API's rendered bodies (schedweb.api.cache). Losing Redis must not
turn requests into 500s, nor make each one wait through redis-py's reconnect retries. So a Redis
error switches this process to a local LocMemCache for RETRY_SECONDS (throttles keep counting,
per process), then Redis is tried again. Short socket timeouts bound the first failing call.

Counters that guard against abuse (login failures, bad API tokens, request rates) must not grow
their limit with the number of web processes while each counts for itself: `shared_count` tells
the caller whether a count is shared, and `per_process_limit` is the stricter limit to apply
when it is not (THROTTLE_PROCESSES, the web worker count).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 10.0
SOCKET_TIMEOUT = 0.5  # seconds; Redis answers in well under a millisecond when it is up

# The BaseCache API the project (and DRF, Django's auth) reach; each falls back on a Redis error.
_METHODS = ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many",
            "delete_many", "clear", "get_or_set", "decr")


def _fallback_on_redis_error(name: str) -> Callable[..., Any]:
    redis_method = getattr(RedisCache, name)

    @functools.wraps(redis_method)
    def method(self: ResilientRedisCache, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() < self.down_until:
            return getattr(self.fallback, name)(*args, **kwargs)
        try:
            return redis_method(self, *args, **kwargs)
        except RedisError as exc:
            self.down_until = time.monotonic() + RETRY_SECONDS
            logger.warning("cache: Redis unavailable (%s); this process uses its memory for %ss",
                           exc, RETRY_SECONDS)
            return getattr(self.fallback, name)(*args, **kwargs)

    return method


class ResilientRedisCache(RedisCache):
    """django.core.cache.backends.redis.RedisCache that degrades to a per-process memory cache."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        params = {**params, "OPTIONS": {"socket_connect_timeout": SOCKET_TIMEOUT,
                                        "socket_timeout": SOCKET_TIMEOUT, **params.get("OPTIONS", {})}}
        super().__init__(server, params)
        self.fallback = LocMemCache("schedweb-redis-fallback", {
            "TIMEOUT": params.get("TIMEOUT", 300), "KEY_PREFIX": params.get("KEY_PREFIX", ""),
            "VERSION": params.get("VERSION", 1)})
        self.down_until = 0.0

    @property
    def local(self) -> bool:
        """True while this process keeps the cache in its own memory (Redis failed recently)."""
        return time.monotonic() < self.down_until

    def count(self, key: str, timeout: int, *, sliding: bool = False) -> int:
        """Add 1 to the counter `key` (created at 1, expiring `timeout` s after its creation, or
        after its latest count when `sliding`) and return its new value: one round trip (INCR and
        EXPIRE pipelined), where Django's add + incr take three (SET NX, EXISTS, INCRBY)."""
        if self.local:
            return local_count(self.fallback, key, timeout, sliding=sliding)
        try:
            name = self.make_and_validate_key(key)
            pipe = self._cache.get_client(name, write=True).pipeline(transaction=False)
            pipe.incr(name)
            pipe.expire(name, timeout, nx=not sliding)
            return int(pipe.execute()[0])
        except RedisError as exc:
            self.down_until = time.monotonic() + RETRY_SECONDS
            logger.warning("cache: Redis unavailable (%s); this process uses its memory for %ss",
                           exc, RETRY_SECONDS)
            return local_count(self.fallback, key, timeout, sliding=sliding)


def local_count(cache: Any, key: str, timeout: int, *, sliding: bool = False) -> int:
    """ResilientRedisCache.count on any Django cache (add, then incr; touch when `sliding`)."""
    cache.add(key, 0, timeout=timeout)
    try:
        value = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=timeout)
        return 1
    if sliding:
        cache.touch(key, timeout)
    return value


def shared_count(cache: Any, key: str, timeout: int, *, sliding: bool = False) -> tuple[int, bool]:
    """Count one event under `key`: (the new count, True when it was counted in this process's
    memory only because Redis is down). A cache configured as local (no REDIS_URL) counts as
    shared: by configuration it is the whole deployment's cache (one web process).

    `cache` may be django.core.cache.cache (a proxy), hence duck typing, not isinstance."""
    count = getattr(cache, "count", None)  # ResilientRedisCache's one-round-trip counter
    if count is None:
        return local_count(cache, key, timeout, sliding=sliding), False
    value = count(key, timeout, sliding=sliding)
    return value, is_local(cache)


def is_local(cache: Any) -> bool:
    """True while `cache` (a ResilientRedisCache or a proxy to one) uses this process's memory."""
    return bool(getattr(cache, "local", False))


def per_process_limit(limit: int, local: bool) -> int:
    """`limit` when counts are shared; else the share of one of THROTTLE_PROCESSES web
    processes (at least 1), so all of them together never allow more than `limit`."""
    if not local:
        return limit
    processes = max(1, int(getattr(settings, "THROTTLE_PROCESSES", 2)))
    return max(1, limit // processes)


for _name in _METHODS:
    setattr(ResilientRedisCache, _name, _fallback_on_redis_error(_name))

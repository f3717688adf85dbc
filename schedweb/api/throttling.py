"""API rate limits as fixed-window counters: O(1) per request in the shared cache.

DRF's own throttles keep, per client, the list of every request time in the last window and
read and rewrite that whole list on each request: at the user rate of 20,000/minute that is a
list of up to 20,000 floats pickled to and from Redis per request. These count instead: one
counter per (client, window), counted in one Redis round trip (ResilientRedisCache.count;
Django's add + incr elsewhere). The price is the usual fixed-window one:
a client may send up to twice the rate across a window boundary. Rates, scopes and cache keys
are DRF's (settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]); a refusal is a 429 with
Retry-After = the seconds left in the window.
"""

from __future__ import annotations

from typing import Any

from rest_framework import throttling

from schedweb.core.cache_backend import local_count


class FixedWindowMixin:
    """allow_request/wait of SimpleRateThrottle, counting per fixed window."""

    window_end: float = 0.0
    now: float = 0.0

    def allow_request(self, request: Any, view: Any) -> bool:
        """Count this request in its window; False once the window's count passes the rate."""
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_end = (window + 1) * self.duration
        counter = f"{key}:w{window}"
        timeout = self.duration + 1  # outlives its window, then expires
        counted = getattr(self.cache, "count", None)  # the deployment's ResilientRedisCache
        count = counted(counter, timeout) if counted else local_count(self.cache, counter, timeout)
        return count <= self.num_requests

    def wait(self) -> float:
        """Seconds until the window ends (DRF rounds it up for Retry-After)."""
        return max(self.window_end - self.now, 0.0)


class AnonRateThrottle(FixedWindowMixin, throttling.AnonRateThrottle):
    """DRF's AnonRateThrottle (scope "anon", per client IP), counted per fixed window."""


class UserRateThrottle(FixedWindowMixin, throttling.UserRateThrottle):
    """DRF's UserRateThrottle (scope "user", per user id), counted per fixed window."""

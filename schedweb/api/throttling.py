"""API rate limits as fixed-window counters: O(1) per request in the shared cache.

DRF's own throttles keep, per client, the list of every request time in the last window and
read and rewrite that whole list on each request: at the user rate of 20,000/minute that is a
list of up to 20,000 floats pickled to and from Redis per request. These count instead: one
counter per (client, window), counted in one Redis round trip (ResilientRedisCache.count;
Django's add + incr elsewhere). The price is the usual fixed-window one:
a client may send up to twice the rate across a window boundary. Rates, scopes and cache keys
are DRF's (settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]); a refusal is a 429 with
Retry-After = the seconds left in the window. While Redis is down each web process counts for
itself, against its share of the rate (cache_backend.per_process_limit).

Every throttle keys a client by schedweb.http.client_address (REMOTE_ADDR, or the entry our own
TRUSTED_PROXY_COUNT proxies added to X-Forwarded-For), never by DRF's get_ident, which without
NUM_PROXIES believes whatever X-Forwarded-For a client writes.

BadTokenThrottle counts, per client address, the requests whose token failed authentication
(schedweb.api.authentication): DRF's own throttles run only after authentication succeeded, so
without it a wrong key could be tried at any speed.
"""

from __future__ import annotations

from typing import Any

from rest_framework import throttling

from schedweb.http.cache_backend import per_process_limit, shared_count
from schedweb.http.client_address import client_address

BAD_TOKEN_RATE = "30/minute"  # when settings name no "bad_token" rate


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
        count, local = shared_count(self.cache, counter, timeout)
        return count <= per_process_limit(self.num_requests, local)

    def wait(self) -> float:
        """Seconds until the window ends (DRF rounds it up for Retry-After)."""
        return max(self.window_end - self.now, 0.0)

    def get_ident(self, request: Any) -> str:
        """The client's address as every throttle sees it (schedweb.http.client_address)."""
        return client_address(request)


class AnonRateThrottle(FixedWindowMixin, throttling.AnonRateThrottle):
    """DRF's AnonRateThrottle (scope "anon", per client IP), counted per fixed window."""


class UserRateThrottle(FixedWindowMixin, throttling.UserRateThrottle):
    """DRF's UserRateThrottle (scope "user", per user id), counted per fixed window."""


class BadTokenThrottle(FixedWindowMixin, throttling.SimpleRateThrottle):
    """Failed token authentications per client address (scope "bad_token"); counted only when a
    token fails, so a valid token, from any address, is never refused by it."""

    scope = "bad_token"

    def get_rate(self) -> str:
        """settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["bad_token"], else BAD_TOKEN_RATE."""
        return self.THROTTLE_RATES.get(self.scope) or BAD_TOKEN_RATE

    def get_cache_key(self, request: Any, view: Any) -> str:
        """One counter per client address (client_address: REMOTE_ADDR, or the entry trusted
        proxies added to X-Forwarded-For)."""
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def bad_token_wait(request: Any) -> float | None:
    """Count one failed token authentication from the request's address: None while under the
    rate, else the seconds until its window ends (the 429's Retry-After)."""
    throttle = BadTokenThrottle()
    return None if throttle.allow_request(request, None) else throttle.wait()


def reset_bad_tokens(ip: str) -> None:
    """Forget the failed token authentications counted for `ip` in the current window."""
    throttle = BadTokenThrottle()
    key = throttle.cache_format % {"scope": throttle.scope, "ident": ip}
    throttle.cache.delete(f"{key}:w{int(throttle.timer() // throttle.duration)}")

"""Login throttling, per username and per client address separately, with a capped back-off.

Every failed login (Django's user_login_failed signal, so every form that calls authenticate()
counts) adds one to two counters in the default cache: the username's (from any address) and the
address's (for any username). A counter forgets its failures LOGIN_THROTTLE_WINDOW seconds after
the latest one. From its limit on (LOGIN_THROTTLE_USER_FAILURES, LOGIN_THROTTLE_IP_FAILURES),
each failure locks that username or address for a back-off that doubles from
LOGIN_THROTTLE_BACKOFF seconds up to LOGIN_THROTTLE_MAX_BACKOFF. So guessing one account from many
addresses, or many accounts from one address, gets about one try per back-off, while an attacker
can never keep an account's owner out for longer than the capped back-off after the last try;
`manage.py throttle_reset --username NAME --ip ADDR` lifts a lock at once. A successful login
clears its username's counter (not its address's: signing in to one's own account must not reset
the count of an address that guesses others).

While Redis is down each web process counts in its own memory; the limits then shrink to one
process's share (cache_backend.per_process_limit) so that all processes together allow no more.
The middleware answers 429 on the login URLs before a password is checked; ThrottledModelBackend
refuses a locked username or address wherever authenticate() is called with a request.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from schedweb.http.cache_backend import per_process_limit, shared_count
from schedweb.http.client_address import client_address
from schedweb.http.middleware import error_response

USER, IP = "user", "ip"
MAX_DOUBLINGS = 30  # the exponent stops here (2**30 s is past any cap) instead of overflowing


@dataclass(frozen=True)
class Limits:
    """The throttle's settings (see README "Configuration")."""

    user_failures: int
    ip_failures: int
    window: int
    backoff: float
    max_backoff: float


def limits() -> Limits:
    """The current settings, with the documented defaults."""
    return Limits(user_failures=int(getattr(settings, "LOGIN_THROTTLE_USER_FAILURES", 5)),
                  ip_failures=int(getattr(settings, "LOGIN_THROTTLE_IP_FAILURES", 20)),
                  window=int(getattr(settings, "LOGIN_THROTTLE_WINDOW", 15 * 60)),
                  backoff=float(getattr(settings, "LOGIN_THROTTLE_BACKOFF", 1)),
                  max_backoff=float(getattr(settings, "LOGIN_THROTTLE_MAX_BACKOFF", 300)))


def now() -> float:
    """Wall-clock seconds; lock ends are compared with it (tests replace it to move time)."""
    return time.time()


def _key(kind: str, subject: str, what: str) -> str:
    digest = hashlib.sha256(f"{kind}|{subject}".encode()).hexdigest()
    return f"login-{what}:{kind}:{digest}"


def _subjects(username: str, ip: str) -> list[tuple[str, str, int]]:
    """(kind, normalised subject, failure limit) for the non-empty username and address."""
    lim = limits()
    subjects = []
    if username.strip():
        subjects.append((USER, username.strip().lower(), lim.user_failures))
    if ip:
        subjects.append((IP, ip, lim.ip_failures))
    return subjects


def client_ip(request: HttpRequest | None) -> str:
    """The client's address, as every throttle keys it (schedweb.http.client_address:
    REMOTE_ADDR, or the X-Forwarded-For entry added by TRUSTED_PROXY_COUNT proxies)."""
    return client_address(request)


def backoff_seconds(failures: int, limit: int) -> float:
    """The lock that the `failures`-th failure sets: none below `limit`, LOGIN_THROTTLE_BACKOFF at
    it, doubling with each further failure up to LOGIN_THROTTLE_MAX_BACKOFF."""
    if failures < limit:
        return 0.0
    lim = limits()
    return min(lim.backoff * 2 ** min(failures - limit, MAX_DOUBLINGS), lim.max_backoff)


def failures(username: str = "", ip: str = "") -> dict[str, int]:
    """Failures remembered now, by kind ("user", "ip"), for the given username and/or address."""
    subjects = _subjects(username, ip)
    stored = cache.get_many([_key(kind, subject, "failures") for kind, subject, _ in subjects])
    return {kind: int(stored.get(_key(kind, subject, "failures")) or 0) for kind, subject, _ in subjects}


def locked_for(username: str, ip: str) -> float:
    """Seconds until neither the username nor the address is locked (0.0 when neither is)."""
    keys = [_key(kind, subject, "lock") for kind, subject, _ in _subjects(username, ip)]
    ends = [float(end) for end in cache.get_many(keys).values() if end is not None]
    return max([0.0] + [end - now() for end in ends])


def record_failure(username: str, ip: str) -> None:
    """Count one failed login for the username and for the address; lock those at their limit."""
    window = limits().window
    for kind, subject, limit in _subjects(username, ip):
        count, local = shared_count(cache, _key(kind, subject, "failures"), window, sliding=True)
        wait = backoff_seconds(count, per_process_limit(limit, local))
        if wait > 0:
            cache.set(_key(kind, subject, "lock"), now() + wait, timeout=math.ceil(wait) + 1)


def reset(*, usernames: Iterable[str] = (), ips: Iterable[str] = ()) -> None:
    """Forget the failures and lift the locks of these usernames and addresses (admin reset)."""
    keys = []
    for username in usernames:
        keys += [_key(kind, subject, what) for kind, subject, _ in _subjects(username, "")
                 for what in ("failures", "lock")]
    for ip in ips:
        keys += [_key(kind, subject, what) for kind, subject, _ in _subjects("", ip)
                 for what in ("failures", "lock")]
    if keys:
        cache.delete_many(keys)


@receiver(user_login_failed, dispatch_uid="schedweb_login_throttle_failed")
def count_failure(sender, credentials: dict, request: HttpRequest | None = None, **kwargs) -> None:
    """Count one failure, unless the attempt was refused unchecked because of a lock."""
    if request is None or getattr(request, "_login_throttled", False):
        return
    record_failure(str(credentials.get("username") or ""), client_ip(request))


@receiver(user_logged_in, dispatch_uid="schedweb_login_throttle_success")
def clear_failures(sender, request: HttpRequest | None, user, **kwargs) -> None:
    """A successful login forgets its username's failures (its address keeps its count)."""
    if request is not None:
        reset(usernames=[user.get_username()])


class ThrottledModelBackend(ModelBackend):
    """ModelBackend that refuses a locked username or address even with the right password."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        """PermissionDenied (no password check, not counted) while locked."""
        if request is not None and username and locked_for(str(username), client_ip(request)) > 0:
            request._login_throttled = True  # authenticate() signals a failure; count_failure skips it
            raise PermissionDenied("Too many failed logins.")
        return super().authenticate(request, username=username, password=password, **kwargs)


def _is_login_view(request: HttpRequest) -> bool:
    if request.path in getattr(settings, "LOGIN_THROTTLE_PATHS", ()):
        return True
    try:
        return resolve(request.path_info).url_name == "login"
    except Resolver404:
        return False


class LoginThrottleMiddleware:
    """429 too_many_login_failures (Retry-After: the lock's rest) for a POST to a login view while
    its username or the client's address is locked."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Check the username and address before the login view sees the password."""
        if request.method == "POST" and _is_login_view(request):
            wait = locked_for(request.POST.get("username", ""), client_ip(request))
            if wait > 0:
                return error_response(request, 429, "too_many_login_failures",
                                      "Too many failed logins; try again later.",
                                      {"Retry-After": str(max(1, math.ceil(wait)))})
        return self.get_response(request)

"""Login throttling: after LOGIN_THROTTLE_FAILURES failed logins for one username from one IP
within LOGIN_THROTTLE_WINDOW seconds, further attempts get 429 until the window ends.

Counted in the default cache (Redis in deployments, so all workers share it) from Django's
user_login_failed signal, so every login form that calls authenticate() counts. The middleware
answers 429 on the login URLs; ThrottledModelBackend also refuses authentication for a locked
pair wherever authenticate() is called with a request.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from schedweb.core.middleware import error_response

DEFAULT_FAILURES = 10
DEFAULT_WINDOW = 15 * 60


def _limits() -> tuple[int, int]:
    return (int(getattr(settings, "LOGIN_THROTTLE_FAILURES", DEFAULT_FAILURES)),
            int(getattr(settings, "LOGIN_THROTTLE_WINDOW", DEFAULT_WINDOW)))


def _key(username: str, ip: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}|{ip}".encode()).hexdigest()
    return f"login-failures:{digest}"


def client_ip(request: HttpRequest | None) -> str:
    """The peer address (a proxy in front must set REMOTE_ADDR, e.g. gunicorn --forwarded-allow-ips)."""
    return (request.META.get("REMOTE_ADDR") or "") if request is not None else ""


def failures(username: str, ip: str) -> int:
    """Failed logins counted for the pair in the current window."""
    return int(cache.get(_key(username, ip)) or 0)


def is_locked(username: str, ip: str) -> bool:
    """True when the pair reached the failure limit."""
    return failures(username, ip) >= _limits()[0]


@receiver(user_login_failed, dispatch_uid="schedweb_login_throttle_failed")
def count_failure(sender, credentials: dict, request: HttpRequest | None = None, **kwargs) -> None:
    """Count one failure for (username, IP); the window starts at the first failure."""
    username = str(credentials.get("username") or "")
    if request is None or not username:
        return
    key = _key(username, client_ip(request))
    cache.add(key, 0, timeout=_limits()[1])
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=_limits()[1])


@receiver(user_logged_in, dispatch_uid="schedweb_login_throttle_success")
def clear_failures(sender, request: HttpRequest | None, user, **kwargs) -> None:
    """A successful login forgets the pair's failures."""
    if request is not None:
        cache.delete(_key(user.get_username(), client_ip(request)))


class ThrottledModelBackend(ModelBackend):
    """ModelBackend that refuses a locked (username, IP) pair even with the right password."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        """None (and no password check) while the pair is locked."""
        if request is not None and username and is_locked(str(username), client_ip(request)):
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
    """429 too_many_login_failures for a POST to a login view by a locked (username, IP) pair."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Check the pair before the login view sees the password."""
        if request.method == "POST" and _is_login_view(request):
            username = request.POST.get("username", "")
            if username and is_locked(username, client_ip(request)):
                return error_response(request, 429, "too_many_login_failures",
                                      "Too many failed logins; try again later.",
                                      {"Retry-After": str(_limits()[1])})
        return self.get_response(request)

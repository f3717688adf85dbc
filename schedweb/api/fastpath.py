"""A fast path for cached, token-authenticated GETs of the queue tree and the job list.

Both endpoints answer from bodies cached per data version (schedweb.api.cache); what is left of
a cached read is the CPU of Django REST Framework's view machinery (Request wrapper, content
negotiation, authenticator/permission/throttle objects, finalize_response), which at 16-64
clients on two cores makes requests queue. FastPathMiddleware answers such a read itself when a
body is at hand, and hands every other request, unchanged, to the normal view. Installed when
settings.API_FAST_PATH (default on): with the bodies prebuilt after each cycle it still gives
1.3-1.5x the requests/s and about 0.75x the p99 of the view at M (README "Benchmarks").

Why a middleware, and why last in settings.MIDDLEWARE: every other middleware (security headers,
X-Request-ID and the audit context, the request size limit, sessions, CommonMiddleware's host
check and Content-Length, CSRF cookie upkeep, X-Frame-Options, ...) runs around it exactly as
around the view, so their effects on a fast answer are the normal path's by construction; only
URL resolution and the DRF view are skipped. A view wrapper would have had to change the URLconf
or the views, which other code owns.

What a fast answer keeps (anything it cannot keep exactly falls through to the view):

- only `GET` of the two paths (as reversed from the URLconf; any query string for the job list),
  with a token header and a plain-JSON negotiation: Accept absent, `*/*` or `application/json`,
  and no `?format=` but `json`;
- the token is checked by schedweb.api.authentication.check_token, the authenticator's own check
  (header parsing, active, unexpired, not revoked, user active; last_used refreshed), which also
  reads the data version in the same round trip on PostgreSQL. A bad token falls through (DRF
  answers its 401, or 429 past the bad-token rate, and counts it once);
- the view's policies are read from the view class at first use, and the fast path switches
  itself off for an endpoint whose view no longer matches what it reproduces: ApiToken
  authentication first, only IsAuthenticated, only schedweb.api.throttling's, JSON as first
  renderer, DRF's default negotiation, no versioning, none of the hooks overridden;
- the body comes from schedweb.api.cache.cached_body under the key cached_json uses
  (body_key: endpoint, read_scope, media type, absolute URL), so no body crosses a permission
  line; when cached_json would have to compute, the view does it (nothing is computed here);
- throttles run after the body is found, as DRF's check_throttles would (the view's throttle
  classes, schedweb.api.throttling, count the request in the same cache entry); a refused
  request falls through and DRF answers its usual 429 (counting it once more, which changes
  nothing: the window is already over its rate);
- the response is cached_json's (200 or 304 on If-None-Match, ETag) plus the headers DRF's
  finalize_response adds for that view (Allow, Vary: Accept); request.user/auth are set as DRF
  sets them. A database error falls through, so the view's path gives its 503.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, resolve, reverse
from django.utils.cache import cc_delim_re, patch_vary_headers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.settings import api_settings
from rest_framework.views import APIView
from rest_framework.viewsets import ViewSetMixin

from schedweb.api import cache as api_cache
from schedweb.api import throttling
from schedweb.api.authentication import ApiTokenAuthentication, check_token

logger = logging.getLogger(__name__)

# (URL name, the endpoint name the view passes to cached_json): must match the views.
ENDPOINTS = (("api:queue-tree", "queue-tree"), ("api:job-list", "job-list"))
JSON_ACCEPTS = (None, "*/*", "application/json")
MEDIA_TYPE = "application/json"  # what DRF negotiates for those Accept values
_KNOWN_THROTTLES = (throttling.AnonRateThrottle, throttling.UserRateThrottle)
# Hooks of APIView whose default behaviour (or ViewSetMixin's) the fast path reproduces.
_HOOKS = ("dispatch", "initial", "initialize_request", "finalize_response", "get_authenticators",
          "get_permissions", "get_throttles", "check_permissions", "check_throttles",
          "perform_authentication", "perform_content_negotiation", "get_content_negotiator",
          "get_renderers", "determine_version", "default_response_headers")


@dataclass(frozen=True)
class Endpoint:
    """What the fast path needs of one view: its cache name, throttles and DRF's extra headers."""

    name: str
    throttle_classes: tuple[type, ...]
    headers: dict[str, str]


def _view_endpoint(path: str, name: str) -> Endpoint | None:
    """The Endpoint of the view serving GET `path`, or None when the fast path cannot stand in."""
    match = resolve(path)
    func = match.func
    cls, actions = getattr(func, "cls", None), getattr(func, "actions", None)
    if cls is None or not issubclass(cls, APIView) or match.args or match.kwargs:
        return None
    if any(getattr(cls, hook) not in (getattr(APIView, hook), getattr(ViewSetMixin, hook, None))
           for hook in _HOOKS):
        return None
    view = cls(**getattr(func, "initkwargs", {}))
    if actions is not None:  # a viewset: bind its actions to methods as ViewSetMixin.as_view does
        actions = dict(actions)
        if "get" in actions and "head" not in actions:
            actions["head"] = actions["get"]
        view.action_map = actions
        for method, action in actions.items():
            setattr(view, method, getattr(view, action))
    renderers = list(view.renderer_classes)
    auth = list(view.authentication_classes)
    if not (renderers and renderers[0] is JSONRenderer and JSONRenderer.media_type == MEDIA_TYPE
            and auth and auth[0] is ApiTokenAuthentication
            and all(p is IsAuthenticated for p in view.permission_classes)
            and all(t in _KNOWN_THROTTLES for t in view.throttle_classes)
            and view.content_negotiation_class is DefaultContentNegotiation
            and view.versioning_class is None and api_settings.URL_FORMAT_OVERRIDE == "format"):
        return None
    return Endpoint(name, tuple(view.throttle_classes), dict(view.default_response_headers))


def _endpoints() -> dict[str, Endpoint]:
    table: dict[str, Endpoint] = {}
    for url_name, name in ENDPOINTS:
        try:
            path = reverse(url_name)
        except NoReverseMatch:
            continue
        endpoint = _view_endpoint(path, name)
        if endpoint is not None:
            table[path] = endpoint
        else:
            logger.warning("API fast path off for %s: its view differs from what it reproduces", path)
    return table


def _plain_json(request: HttpRequest) -> bool:
    """True when DRF would negotiate its JSON renderer as application/json (no parameters)."""
    if request.META.get("HTTP_ACCEPT") not in JSON_ACCEPTS:
        return False
    formats = request.GET.getlist(api_settings.URL_FORMAT_OVERRIDE)
    return not formats or formats == ["json"]


class FastPathMiddleware:
    """Answers cached token-authenticated GETs of the queue tree and job list (see module doc)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._table: dict[str, Endpoint] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """The fast answer when there is one, else the normal path."""
        if request.method == "GET":
            response = self._answer(request)
            if response is not None:
                return response
        return self.get_response(request)

    def _endpoint(self, request: HttpRequest) -> Endpoint | None:
        if getattr(request, "urlconf", None) is not None:
            return None  # a per-request URLconf: the table below does not describe it
        if self._table is None:
            self._table = _endpoints()
        return self._table.get(request.path_info)

    def _answer(self, request: HttpRequest) -> HttpResponse | None:
        endpoint = self._endpoint(request)
        if endpoint is None or not _plain_json(request) or "HTTP_AUTHORIZATION" not in request.META:
            return None
        before = {name: request.__dict__[name] for name in ("user", "auth") if name in request.__dict__}
        try:
            response = self._serve(request, endpoint)
        except DatabaseError:
            response = None  # the view's path meets the same error and gives its 503
        except Exception:
            logger.exception("API fast path failed; serving %s through the view", request.path)
            response = None
        if response is None:
            for name in ("user", "auth"):  # as the normal path would find them
                if name in before:
                    setattr(request, name, before[name])
                else:
                    request.__dict__.pop(name, None)
        return response

    def _serve(self, request: HttpRequest, endpoint: Endpoint) -> HttpResponse | None:
        token, _ = check_token(request)
        if token is None:
            return None  # DRF's authenticator gives the 401 (or 429), or another one applies
        request.user, request.auth = token.user, token  # as DRF's Request sets them
        body = api_cache.cached_body(request, endpoint.name, MEDIA_TYPE)
        if body is None:
            return None  # cached_json computes it in the view
        for throttle_class in endpoint.throttle_classes:
            if not throttle_class().allow_request(request, None):
                return None  # not recorded: DRF's check_throttles refuses again with its 429
        response = api_cache.respond(request, body)
        headers = dict(endpoint.headers)
        vary = headers.pop("Vary", None)  # as APIView.finalize_response adds them
        if vary is not None:
            patch_vary_headers(response, cc_delim_re.split(vary))
        for name, value in headers.items():
            response[name] = value
        return response

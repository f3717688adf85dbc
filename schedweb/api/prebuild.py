"""The readers' bodies of a new data version, built by the cycle process after each cycle commits.

After a cycle the data version changes, and without this every web process would compute the
queue tree and the job lists again on the request path, each for itself, while its other threads
wait for the GIL. Instead, `after_cycle()` (called by schedweb.scheduling.cycle.cycle_run after
its transaction) builds them once, through the views themselves (so byte for byte what a reader
would compute: same serializers, pagination, renderer, absolute URLs), into the shared cache
(Redis) under the keys schedweb.api.cache reads.

Which bodies: the ones readers asked for, as they asked (scheme, host, path, query, media type),
from the *wanted* list in the shared cache. A reader that misses a body in its own memory notes
its URL there (schedweb.api.cache; a write at most once a minute per URL) when it is a first
page of a common view: the queue tree, or the job list filtered by phase, state, queue,
namespace, reason code or submitter (limit up to 100; no search, no offset; ordered as the list
is by default or by one of PREBUILT_ORDERINGS: any other ordering is a reader's to compute, since
a reader choosing it would otherwise make the cycle process sort for it after every cycle). The
API_PREBUILD_MAX (default 8) most recently wanted are built, newest first, until the cycle's
API_PREBUILD_BUDGET_S (default 0.5 s; 0 = none) is spent: the rest are computed by the readers
who ask. One not wanted for IDLE_SECONDS is dropped. The time spent, the bodies built and those
left to readers are recorded in the cycle's timing (`prebuild_s`, `prebuild_bodies`,
`prebuild_skipped`: `record()`), so the work readers cause the scheduler process shows in the
cycle metrics.

While the cycle process builds, readers that see the new cycle's version answer with the body
they have (the previous cycle's, within API_CACHE_SECONDS) instead of computing it too, for at
most API_PREBUILD_GRACE seconds (default 1; then they compute as before): the cycle process's
state in the shared cache says whether it builds (active_until) and which cycle it finished
(done). Versions other writers made between cycles (a submission, a task report) are computed by
readers: once per version, by the web process that claims it in the shared cache (the other
threads and processes answer their previous body meanwhile, API_PREBUILD_GRACE at most).
Without a shared cache (no REDIS_URL) the cycle process's list stays empty and nothing is built
(`make run`: the scheduler is a process of its own; each web process computes for itself).
Settings: API_PREBUILD (default True), API_PREBUILD_MAX, API_PREBUILD_GRACE, API_PREBUILD_BUDGET_S.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.db import transaction
from django.urls import Resolver404, get_script_prefix, resolve, set_script_prefix

logger = logging.getLogger(__name__)

WANTED_KEY = "api-prebuild:1:wanted"
STATE_KEY = "api-prebuild:1:state"
IDLE_SECONDS = 600.0  # a URL nobody wanted for this long is no longer built
REFRESH_SECONDS = 60.0  # a reader rewrites its URL's entry at most this often
ACTIVE_SECONDS = 30.0  # readers wait for a cycle process that built within this long
MAX_LIMIT = 100  # the biggest ?limit= of a page built after each cycle
# The job list's orderings a prebuilt page may have (besides none: the list's default).
PREBUILT_ORDERINGS = frozenset({"created", "-created", "name", "-name"})
ENDPOINT_QUERIES = {  # query parameters of a first page of a common view (values are free)
    "queue-tree": frozenset({"format"}),
    "job-list": frozenset({"format", "phase", "state", "queue", "namespace", "reason_code",
                           "submitted_by", "ordering", "limit"}),
}


@dataclass(frozen=True)
class Wanted:
    """One body readers asked for: the endpoint's cache name and the request that asks for it."""

    endpoint: str
    media_type: str
    scheme: str
    host: str
    script_name: str
    path_info: str
    query: str


@dataclass(frozen=True)
class State:
    """What the cycle process tells readers: the bodies (keys) it builds after each cycle, the
    newest cycle it built them for, and until when (wall clock) it counts as building."""

    bases: frozenset[str]
    done: int
    active_until: float


def max_wanted() -> int:
    """How many wanted bodies the cycle process builds after a cycle (settings override)."""
    return int(getattr(settings, "API_PREBUILD_MAX", 8))


def budget_seconds() -> float:
    """The prebuild time one cycle may spend (settings.API_PREBUILD_BUDGET_S; 0 = no budget)."""
    return float(getattr(settings, "API_PREBUILD_BUDGET_S", 0.5))


def grace_seconds() -> float:
    """How long a reader answers the previous body while the cycle process builds (settings)."""
    return float(getattr(settings, "API_PREBUILD_GRACE", 1.0))


def enabled() -> bool:
    """Whether the cycle process builds bodies after each cycle (settings.API_PREBUILD)."""
    return bool(getattr(settings, "API_PREBUILD", True))


def cycle_of(version: str) -> int:
    """The newest cycle id a data version (schedweb.api.cache.version_digest) includes; -1: none."""
    head = version.partition(":")[0]
    return int(head) if head.isdigit() else -1


def wanted_of(request, endpoint: str, media_type: str) -> Wanted | None:
    """The Wanted entry for this reader's request, or None when it is not a first page of a
    common view (those are computed by the readers who ask, as before)."""
    django_request = getattr(request, "_request", request)
    allowed = ENDPOINT_QUERIES.get(endpoint)
    query = django_request.META.get("QUERY_STRING", "")
    pairs = parse_qsl(query, keep_blank_values=True)
    if allowed is None or not {name for name, _ in pairs} <= allowed or django_request.method != "GET":
        return None
    if any(name == "limit" and not (value.isdigit() and int(value) <= MAX_LIMIT) for name, value in pairs):
        return None  # a big page costs the cycle process as much as it saves one reader
    if any(name == "ordering" and value not in PREBUILT_ORDERINGS for name, value in pairs):
        return None  # an unusual sort is its reader's to pay for, not every cycle's
    return Wanted(endpoint, media_type or "", django_request.scheme, django_request.get_host(),
                  django_request.META.get("SCRIPT_NAME", ""), django_request.path_info, query)


def note_wanted(wanted: Wanted | None, base: str, current: dict | None) -> None:
    """Add (or refresh, at most once a minute) this body in the wanted list; `current` is the
    list as the reader's lookup read it. A lost race between two writers loses an entry until
    its next miss, which is harmless."""
    if wanted is None:
        return
    now = time.time()
    entries = dict(current or {})
    seen = entries.get(base)
    if seen is not None and now - seen[1] < REFRESH_SECONDS:
        return
    entries[base] = (wanted, now)
    kept = sorted(((k, v) for k, v in entries.items() if now - v[1] < IDLE_SECONDS),
                  key=lambda kv: kv[1][1], reverse=True)[: max(1, max_wanted()) * 2]
    cache.set(WANTED_KEY, dict(kept), timeout=int(IDLE_SECONDS))


def reader_waits(base: str, previous_version: str | None, version: str, state: Any,
                 first_seen: float) -> bool:
    """Whether a reader missing body `base` at `version` should answer its previous body (of
    `previous_version`) rather than compute: the cycle process builds that body, the version is a
    newer cycle's than the previous body's and than the last one built, and the reader first saw
    it less than API_PREBUILD_GRACE ago."""
    if (previous_version is None or not isinstance(state, State) or time.time() > state.active_until
            or base not in state.bases):
        return False
    cycle = cycle_of(version)
    return (cycle > cycle_of(previous_version) and cycle > state.done
            and time.monotonic() - first_seen < grace_seconds())


def after_cycle() -> int:
    """Build the wanted bodies for the data version after a cycle; the count built. Never
    raises: a failure is logged and readers compute as before."""
    return _after_cycle()[0]


def _after_cycle() -> tuple[int, int]:
    if not enabled():
        return 0, 0
    try:
        return _build_all()
    except Exception:
        logger.exception("API bodies not prebuilt after the cycle; readers compute them")
        return 0, 0


def record(run: Any) -> None:
    """Prebuild after the cycle `run` (a CycleRun, None when it failed before recording one) and
    add what it cost to the run's timing: `prebuild_s`, `prebuild_bodies`, `prebuild_skipped`
    (wanted bodies left to readers by the budget). Never raises."""
    began = clock()
    built, skipped = _after_cycle()
    seconds = clock() - began
    if getattr(run, "pk", None) is None or getattr(run, "skipped", False) or not (built or skipped):
        return
    try:
        from schedweb.scheduling.models import CycleRun

        run.timing = {**(run.timing or {}), "prebuild_s": seconds, "prebuild_bodies": built,
                      "prebuild_skipped": skipped}
        CycleRun.objects.filter(pk=run.pk).update(timing=run.timing)
    except Exception:
        logger.exception("prebuild timing not recorded on cycle %s", run.pk)


def clock() -> float:
    """Seconds for the budget and the recorded timing (tests replace it to move time)."""
    return time.perf_counter()


def _build_all() -> tuple[int, int]:
    from schedweb.api import cache as api_cache

    entries = cache.get(WANTED_KEY) or {}
    now = time.time()
    newest = sorted(((seen, base, wanted) for base, (wanted, seen) in entries.items()
                     if now - seen < IDLE_SECONDS), key=lambda row: row[0], reverse=True)
    live = {base: wanted for _, base, wanted in newest[: max_wanted()]}
    if not live:
        cache.delete(STATE_KEY)  # nothing is built: no reader waits
        return 0, 0
    version = api_cache.data_version()
    previous = cache.get(STATE_KEY)
    done = previous.done if isinstance(previous, State) else -1
    bases = frozenset(live)
    # Readers that see this cycle's version answer their previous body until `done` moves.
    cache.set(STATE_KEY, State(bases, done, now + ACTIVE_SECONDS), timeout=int(ACTIVE_SECONDS) + 1)
    began, budget, skipped = clock(), budget_seconds(), 0
    with api_cache.prebuilding() as built:
        for base, wanted in live.items():
            if budget > 0 and clock() - began >= budget:
                skipped += 1  # its readers compute it, as for a body nobody wanted
                bases = bases - {base}
                continue
            _build(wanted)
    cache.set(STATE_KEY, State(bases, max(done, cycle_of(version)), time.time() + ACTIVE_SECONDS),
              timeout=int(ACTIVE_SECONDS) + 1)
    count = len(set(built) & set(live))
    logger.debug("prebuilt %d of %d API bodies for %s in %.1f ms (%d left to readers)", count, len(live),
                 version, (clock() - began) * 1e3, skipped)
    return count, skipped


def _build(wanted: Wanted) -> None:
    """Run the view for `wanted` as its reader would: its body lands in the caches."""
    environ = {"REQUEST_METHOD": "GET", "SCRIPT_NAME": wanted.script_name, "PATH_INFO": wanted.path_info,
               "QUERY_STRING": wanted.query, "HTTP_HOST": wanted.host, "HTTP_ACCEPT": wanted.media_type,
               "SERVER_NAME": wanted.host.rsplit(":", 1)[0], "SERVER_PORT": "443" if wanted.scheme == "https"
               else "80", "wsgi.url_scheme": wanted.scheme, "wsgi.input": io.BytesIO(b"")}
    request = WSGIRequest(environ)
    # Every signed-in user reads the same bodies (cache.read_scope): any signed-in user will do.
    request._force_auth_user = _reader()
    prefix = get_script_prefix()
    set_script_prefix(get_script_name(environ))
    try:
        view = _view(wanted.path_info)
        if view is not None:
            with transaction.atomic():  # a failure here leaves an enclosing transaction usable
                view(request)
    except Exception:
        logger.exception("API body for %s not prebuilt", wanted.path_info)
    finally:
        set_script_prefix(prefix)


def _reader() -> Any:
    return get_user_model()(username="api-prebuild", is_active=True)


_views: dict[str, Any] = {}


def _view(path_info: str) -> Any:
    """The URL's view without throttles (the cycle process is no client), or None."""
    if path_info not in _views:
        try:
            match = resolve(path_info)
        except Resolver404:
            return None
        func = match.func
        cls, actions = getattr(func, "cls", None), getattr(func, "actions", None)
        if cls is None or match.args or match.kwargs:
            return None
        kwargs = {**getattr(func, "initkwargs", {}), "throttle_classes": ()}
        _views[path_info] = cls.as_view(actions, **kwargs) if actions is not None else cls.as_view(**kwargs)
    return _views[path_info]

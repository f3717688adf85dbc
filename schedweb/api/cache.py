"""Rendered bodies of the heavy GET endpoints (queue tree, job lists), cached per data version.

A body is keyed by (endpoint, what the user may read, media type, absolute URL) and is valid
for one *data version*: a single round trip of O(1) index lookups (newest cycle and sample
ids, the newest id of the scheduler's change log, which triggers extend for every write of
queues, nodes, priority classes, quotas, jobs and tasks, whoever the writer; SQLite: the
tables' own id and `updated` watermarks). So a new cycle, a submission, a task report or a queue
edit makes the next request compute afresh. A write the version cannot see (a username change,
two transactions committing out of log-id order) shows at the next change (the next cycle) or
after API_CACHE_SECONDS at most. Two levels: this process (no pickling), then Django's cache (Redis
when REDIS_URL is set, shared by all workers). A body is computed once per version: while one
thread of a process recomputes it, its other threads answer with the previous version of the
same URL (at most one recomputation old) instead of queueing, and so do the other processes,
which find the computing one's claim in the shared cache (for API_PREBUILD_GRACE at most); a
request with no body at hand computes or waits. ETag on every cached body; a matching
If-None-Match gets 304.

After a cycle commits, the cycle process builds the common bodies for the new version itself
(schedweb.api.prebuild): a reader finds them in the shared cache, and one that looks while they
are being built answers the body it has (the previous cycle's) instead of computing it too.

schedweb.api.fastpath answers token-authenticated GETs from the same bodies without DRF's view
machinery: it uses cached_body() (the lookup of cached_json without the computation, under the
same body_key and read_scope), and leaves every miss to the view and cached_json.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.http import HttpResponse, HttpResponseNotModified
from rest_framework.renderers import JSONRenderer

from schedweb.api import prebuild
from schedweb.core.models import Job, PriorityClass, Queue, Task
from schedweb.scheduling.models import CycleRun, QueueSample

logger = logging.getLogger(__name__)

KEY_PREFIX = "api-body:3"  # 3: versions lead with the cycle id
# Per process, bounded in count and bytes, since query strings are the client's to choose.
LOCAL_ENTRIES = 256
LOCAL_BYTES = 32 * 1024 * 1024
_STRIPES = 64


def ttl_seconds() -> float:
    """Upper bound on how long a body may be served for one data version (settings override)."""
    return float(getattr(settings, "API_CACHE_SECONDS", 5))


def version_columns() -> str:
    """The SELECT list whose values make the data version (also fused into the token lookup)."""
    t = {m.__name__: m._meta.db_table for m in (CycleRun, QueueSample, Queue, Job, Task, PriorityClass)}
    user_t = get_user_model()._meta.db_table

    # `ORDER BY .. DESC LIMIT 1` rather than max(): the statement runs on every cached read (fused
    # into the token lookup) and is planned every time (client-side binding); cheaper to plan.
    def newest(column: str, table: str) -> str:
        return f"(SELECT {column} FROM {table} ORDER BY {column} DESC LIMIT 1)"

    if connection.vendor == "postgresql":
        # The scheduler's change log (scheduling migration 0004): its triggers add a row for every
        # insert, update and delete of queues, nodes, priority classes, quotas, jobs and tasks,
        # whoever the writer, so its newest id is one primary-key lookup that moves with them all
        # (no `updated` index on jobs and tasks to keep for it).
        return ", ".join((newest("id", t["CycleRun"]), newest("id", t["QueueSample"]),
                          newest("id", "scheduling_change"), newest("id", user_t)))
    # SQLite (development): watermarks of the tables themselves (small tables, no index needed).
    return ", ".join((
        newest("id", t["CycleRun"]), newest("id", t["QueueSample"]),
        f"(SELECT count(*) || ',' || max(updated) || ',' || sum(id) FROM {t['Queue']})",
        newest("id", t["Job"]), f"(SELECT max(updated) FROM {t['Job']})",
        newest("id", t["Task"]), f"(SELECT max(updated) FROM {t['Task']})",
        f"(SELECT group_concat(id || '=' || name, ',') FROM {t['PriorityClass']})", newest("id", user_t),
    ))


def version_digest(values: tuple | list) -> str:
    """The data version of the values read by version_columns(), led by the newest cycle id
    (the first column) so that a reader can tell a new cycle's version (prebuild.cycle_of)."""
    return f"{values[0]}:{hashlib.sha1(repr(tuple(values)).encode()).hexdigest()}"


def data_version(request=None) -> str:
    """A digest of everything the cached bodies are computed from: the one the request's token
    lookup already read (schedweb.api.authentication, same round trip), else one query."""
    known = getattr(request, "api_data_version", None) if request is not None else None
    if known is not None:
        return known
    with connection.cursor() as cur:
        cur.execute("SELECT " + version_columns())
        row = cur.fetchone()
    return version_digest(row)


def read_scope(request) -> str:
    """What the user may read, as part of the key. Every signed-in user reads every queue and job
    (schedweb.api.permissions); should reads ever be restricted, this must name the user's
    visible queue set (e.g. a digest of its ids) so that no body crosses that line."""
    user = request.user
    if not (user and user.is_authenticated):
        raise ValueError("cached bodies are only for signed-in users")
    return "all-signed-in"


@dataclass(frozen=True)
class Body:
    """One rendered body: the version it was computed for, its ETag and bytes."""

    version: str
    etag: str
    content: bytes
    content_type: str
    stored: float  # time.monotonic() when computed or fetched


_local: OrderedDict[str, Body] = OrderedDict()
_local_bytes = 0
_local_lock = threading.Lock()
_compute_locks = [threading.Lock() for _ in range(_STRIPES)]
_first_seen: OrderedDict[str, float] = OrderedDict()  # data version -> when this process first missed it
_noted: dict[str, float] = {}  # body key -> when this process last noted it as wanted
# Set while the cycle process builds bodies (prebuilding()): the keys it has a body for.
_prebuilt: ContextVar[list[str] | None] = ContextVar("api_prebuilt", default=None)


def _local_get(base: str) -> Body | None:
    with _local_lock:
        body = _local.get(base)
        if body is not None:
            _local.move_to_end(base)
        return body


def _local_put(base: str, body: Body) -> None:
    global _local_bytes
    with _local_lock:
        old = _local.pop(base, None)
        _local_bytes -= len(old.content) if old is not None else 0
        _local[base] = body
        _local_bytes += len(body.content)
        while len(_local) > 1 and (len(_local) > LOCAL_ENTRIES or _local_bytes > LOCAL_BYTES):
            _, evicted = _local.popitem(last=False)
            _local_bytes -= len(evicted.content)


def clear_local() -> None:
    """Forget this process's bodies (tests; the shared cache keeps its own TTL)."""
    global _local_bytes
    with _local_lock:
        _local.clear()
        _local_bytes = 0
        _first_seen.clear()
        _noted.clear()


@contextlib.contextmanager
def prebuilding() -> Iterator[list[str]]:
    """Within it cached_json computes every body it lacks, never answering a previous one (this
    is the cycle process building them: schedweb.api.prebuild); yields the keys it had a body for."""
    built: list[str] = []
    token = _prebuilt.set(built)
    try:
        yield built
    finally:
        _prebuilt.reset(token)


def _fresh(body: Body | None, version: str) -> bool:
    return body is not None and body.version == version and time.monotonic() - body.stored < ttl_seconds()


def respond(request, body: Body) -> HttpResponse:
    """200 with the body, or 304 when If-None-Match names its ETag (ETag on both)."""
    if body.etag in _if_none_match(request):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(body.content, content_type=body.content_type)
    response["ETag"] = body.etag
    return response


def _if_none_match(request) -> set[str]:
    raw = request.META.get("HTTP_IF_NONE_MATCH", "")
    return {part.strip().removeprefix("W/") for part in raw.split(",") if part.strip()}


def body_key(request, endpoint: str, media_type: str) -> str:
    """The cache key of a body: (endpoint, what the user may read, media type, absolute URL).
    Shared by cached_json and the fast path (schedweb.api.fastpath), so both find one body."""
    base = "|".join((endpoint, read_scope(request), media_type or "", request.build_absolute_uri()))
    return hashlib.sha1(base.encode()).hexdigest()


def cached_json(view, request, endpoint: str, build: Callable[[], Any]) -> HttpResponse | None:
    """The endpoint's JSON body for this request, from the cache or `build()` (its data).

    None when the negotiated renderer is not plain JSON (the browsable API): the caller then
    answers as usual. `build` may raise (a 400 for a bad filter): nothing is cached then.
    """
    renderer = request.accepted_renderer
    if type(renderer) is not JSONRenderer:
        return None
    media_type = request.accepted_media_type
    base = body_key(request, endpoint, media_type)
    version = data_version(request)
    built = _prebuilt.get()
    body = _local_get(base)
    if not _fresh(body, version):
        lock = _compute_lock(base)
        if built is None and not lock.acquire(blocking=False):
            if _previous(body, version):
                # Another thread is computing this URL's new version: answer with the previous one
                # rather than queue behind it (the request raced that change anyway).
                return respond(request, body)
            lock.acquire()
        elif built is not None:
            lock.acquire()
        try:
            body = _local_get(base)
            if not _fresh(body, version):
                shared, wait = _shared_lookup(request, endpoint, media_type, base, version, body,
                                              reader=built is None, claims=True)
                if wait:
                    return respond(request, body)  # the cycle process is building this version
                body = shared or _compute(view, request, base, version, build)
                _local_put(base, body)
        finally:
            lock.release()
    if built is not None:
        built.append(base)
    return respond(request, body)


def cached_body(request, endpoint: str, media_type: str) -> Body | None:
    """The body cached_json would answer with for this request without computing one
    (schedweb.api.fastpath): this process's fresh one; the previous version while another thread
    or the cycle process computes this one; else the shared cache's. None when cached_json would
    have to compute."""
    base = body_key(request, endpoint, media_type)
    version = data_version(request)
    body = _local_get(base)
    if _fresh(body, version):
        return body
    lock = _compute_lock(base)
    if not lock.acquire(blocking=False):
        return body if _previous(body, version) else None
    try:
        body = _local_get(base)
        if _fresh(body, version):
            return body
        shared, wait = _shared_lookup(request, endpoint, media_type, base, version, body, reader=True,
                                      claims=False)
        if wait:
            return body
        if shared is not None:
            _local_put(base, shared)
        return shared
    finally:
        lock.release()


def _compute_lock(base: str) -> threading.Lock:
    return _compute_locks[int(base[:8], 16) % _STRIPES]


def _previous(body: Body | None, version: str) -> bool:
    """A body another thread's computation will replace, good enough to answer meanwhile: the
    same version past its TTL (only the safety net ran out), or an older one within the TTL."""
    if body is None:
        return False
    return body.version == version or time.monotonic() - body.stored < ttl_seconds()


def _shared_key(base: str, version: str) -> str:
    return f"{KEY_PREFIX}:{base}:{version}"


def _shared_lookup(request, endpoint: str, media_type: str, base: str, version: str,
                   previous: Body | None, *, reader: bool, claims: bool) -> tuple[Body | None, bool]:
    """(the shared cache's body for `version` or None, whether to answer `previous` instead of
    computing: the cycle process or another web process is building this version; else, when
    `claims`, this one claims it). One round trip (two when it claims), which also reads the
    prebuild state and the claim and, at most once a minute per URL, notes the URL as wanted."""
    key = _shared_key(base, version)
    claim = f"{key}:claim"
    keys = [key]
    wanted = None
    now = time.monotonic()
    if reader:
        keys += [prebuild.STATE_KEY, claim]
        if now - _noted.get(base, -prebuild.REFRESH_SECONDS) >= prebuild.REFRESH_SECONDS:
            wanted = prebuild.wanted_of(request, endpoint, media_type)
            if wanted is not None:
                keys.append(prebuild.WANTED_KEY)
    # Redis down needs no care here: the default cache falls back to process memory by itself
    # (schedweb.http.cache_backend.ResilientRedisCache).
    got = cache.get_many(keys)
    if wanted is not None:
        if len(_noted) > LOCAL_ENTRIES:
            _noted.clear()
        _noted[base] = now
        prebuild.note_wanted(wanted, base, got.get(prebuild.WANTED_KEY))
    hit = got.get(key)
    if hit is not None:
        etag, content, content_type, computed_at = hit
        # Age it from when another process computed it (wall clock), so TTL bounds its total age.
        return Body(version, etag, content, content_type, now - max(0.0, time.time() - computed_at)), False
    if not reader:
        return None, False
    usable = _previous(previous, version)
    if usable and prebuild.reader_waits(base, previous.version, version, got.get(prebuild.STATE_KEY),
                                        _seen(version)):
        return None, True  # the cycle process is building it
    grace = prebuild.grace_seconds()
    if claim in got or (claims and not cache.add(claim, 1, timeout=max(1, round(grace)))):
        # Another web process computes it (claimed for as long as a reader waits for it, so a
        # claimer that died is not waited for).
        return None, usable and time.monotonic() - _seen(version) < grace
    return None, False


def _seen(version: str) -> float:
    """When this process first missed a body of `version` (time.monotonic())."""
    with _local_lock:
        first = _first_seen.get(version)
        if first is None:
            first = _first_seen[version] = time.monotonic()
            while len(_first_seen) > 16:
                _first_seen.popitem(last=False)
        return first


def _compute(view, request, base: str, version: str, build: Callable[[], Any]) -> Body:
    began = time.perf_counter()
    data = build()
    renderer = request.accepted_renderer
    content = renderer.render(data, request.accepted_media_type, view.get_renderer_context())
    content_type = renderer.media_type if not renderer.charset else (
        f"{renderer.media_type}; charset={renderer.charset}")
    etag = '"' + hashlib.sha1(content).hexdigest() + '"'
    cache.set(_shared_key(base, version), (etag, content, content_type, time.time()),
              timeout=max(1, int(ttl_seconds())))
    logger.debug("computed %s %s for %s in %.1f ms (%s)", request.method, request.get_full_path(), version,
                 (time.perf_counter() - began) * 1e3, "cycle" if _prebuilt.get() is not None else "reader")
    return Body(version, etag, content, content_type, time.monotonic())

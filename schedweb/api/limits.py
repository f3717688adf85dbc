"""Bounds on one request's work (README "Input limits"): tasks per request and per dry run, and
concurrent dry runs per user.

- A request (one job, a batch, a manifest) makes at most MAX_TASKS_PER_REQUEST tasks, summed over
  all its jobs (a task entry with `replicas: N` counts N), checked before any task is expanded.
  Inside a dry run (`dry_run()`), the bound is MAX_TASKS_PER_DRY_RUN: a dry run also runs a
  scheduling session and a forecast over what it would write.
- Dry runs and previews (`POST jobs/?dry_run=true`, `manifests/import/?dry_run=true`,
  `scheduler-config/dry-run/`, `queues/{name}/preview/`) hold one of the user's
  MAX_CONCURRENT_DRY_RUNS slots while they run: slot keys added with `cache.add` (Redis SET NX,
  shared by every web process) that expire after SLOT_SECONDS, so a process that died holding
  one frees it then. Over the cap: 429 `too_many_dry_runs` with Retry-After. While Redis is down
  each process counts its own slots against its share of the cap (per_process_limit).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from rest_framework import exceptions

from schedweb.http.cache_backend import is_local, per_process_limit

SLOT_SECONDS = 300  # a slot outlives any dry run (their sessions and forecasts are budgeted)
RETRY_AFTER_SECONDS = 5
_in_dry_run: ContextVar[bool] = ContextVar("schedweb_dry_run", default=False)


def max_tasks_per_request() -> int:
    """settings.MAX_TASKS_PER_REQUEST (env, default 10,000): tasks one request may make."""
    return int(getattr(settings, "MAX_TASKS_PER_REQUEST", 10_000))


def max_tasks_per_dry_run() -> int:
    """settings.MAX_TASKS_PER_DRY_RUN (env, default 2,000): tasks one dry run may make."""
    return int(getattr(settings, "MAX_TASKS_PER_DRY_RUN", 2_000))


def max_concurrent_dry_runs() -> int:
    """settings.MAX_CONCURRENT_DRY_RUNS (env, default 2): a user's dry runs at once (0 = no cap)."""
    return int(getattr(settings, "MAX_CONCURRENT_DRY_RUNS", 2))


def task_limit() -> tuple[int, str]:
    """(tasks this request may make, the setting that says so): the dry run's bound in a dry run."""
    if _in_dry_run.get():
        return min(max_tasks_per_dry_run(), max_tasks_per_request()), "MAX_TASKS_PER_DRY_RUN"
    return max_tasks_per_request(), "MAX_TASKS_PER_REQUEST"


def entry_tasks(entry: Any) -> int:
    """Tasks one task entry stands for: its `replicas` when a positive integer, else 1 (so a
    bound counted here never exceeds what draft_job expands)."""
    n = entry.get("replicas") if isinstance(entry, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1


def job_tasks(data: Any) -> int:
    """Tasks a job body (`tasks` entries) stands for."""
    tasks = data.get("tasks") if isinstance(data, dict) else None
    return sum(entry_tasks(t) for t in tasks) if isinstance(tasks, list) else 0


def check_request_tasks(total: int, field: str) -> None:
    """ValidationError on `field` when `total` tasks are more than this request may make."""
    limit, setting = task_limit()
    if total > limit:
        what = "a dry run" if setting == "MAX_TASKS_PER_DRY_RUN" else "one request"
        raise ValidationError({field: [f"The request would make {total} tasks; {what} may make at most "
                                       f"{limit} ({setting})."]})


class TooManyDryRuns(exceptions.Throttled):
    """429 `too_many_dry_runs`: the user already runs MAX_CONCURRENT_DRY_RUNS dry runs."""

    default_code = "too_many_dry_runs"

    def __init__(self, limit: int) -> None:
        super().__init__(wait=RETRY_AFTER_SECONDS, detail=(
            f"At most {limit} dry runs or previews at once per user (MAX_CONCURRENT_DRY_RUNS); "
            "try again when one has finished."), code=self.default_code)


class TooManyPendingJobs(exceptions.APIException):
    """429 `too_many_pending_jobs`: the submitter or the queue has as many waiting jobs as allowed
    (schedweb.core.job_submission.PendingBudget); `fields` names the limit's setting."""

    status_code = 429
    default_code = "too_many_pending_jobs"
    default_detail = "Too many waiting jobs."

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message, self.default_code)
        self.field = setting


@contextlib.contextmanager
def dry_run(user: Any) -> Iterator[None]:
    """Hold one of `user`'s dry-run slots (TooManyDryRuns when none is free) and bound the tasks
    made inside by MAX_TASKS_PER_DRY_RUN."""
    cap = max_concurrent_dry_runs()
    key = None
    if cap > 0:
        key = _acquire(str(getattr(user, "pk", None) or "anonymous"), cap)
    marker = _in_dry_run.set(True)
    try:
        yield
    finally:
        _in_dry_run.reset(marker)
        if key is not None:
            _release(*key)


def _acquire(user_key: str, cap: int) -> tuple[str, str]:
    token = secrets.token_hex(8)
    slots = per_process_limit(cap, is_local(cache))
    for slot in range(slots):
        key = f"dry-run-slot:1:{user_key}:{slot}"
        if cache.add(key, token, timeout=SLOT_SECONDS):
            return key, token
    raise TooManyDryRuns(cap)


def _release(key: str, token: str) -> None:
    # Only our own slot: one that expired and was taken since is the other run's to free.
    if cache.get(key) == token:
        cache.delete(key)

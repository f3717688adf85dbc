"""The pending gate (README "Input limits"): a submitter already at MAX_PENDING_JOBS_PER_USER is
refused before the body is validated.

The job-creating endpoints (POST jobs/, jobs/batch/, manifests/import/, their dry runs) call
this first. One statement (schedweb.core.waiting_counts) counts the user's waiting jobs up to
the limit; at the limit the request gets the very 429 the submission path would give
(limits.TooManyPendingJobs naming MAX_PENDING_JOBS_PER_USER), without the serializers, the
quantity parsing or the manifest's documents being checked. Nothing is kept between requests:
the next request counts again, so a freed budget admits it. A limit of 0 (none) costs no query.

What the count cannot tell is looked up in the same statement, and such a request goes on to
the full path, which answers it as before:
- an Idempotency-Key this user already used (a replay, or a 409 for another body);
- a manifest whose every job document names an existing job (an apply that updates or leaves
  jobs creates none); a manifest without job documents is not gated at all.

What the gate needs is read first: a single job's Idempotency-Key header, a batch's envelope
(an object with a non-empty `jobs` list, at most MAX_JOBS_PER_BATCH) and its items' keys, a
manifest's YAML documents. So at the limit, a request the full path would have refused for
another reason (a forbidden or unknown queue, a taken name, a malformed job) is a 429 now.
The queue limit (MAX_PENDING_JOBS_PER_QUEUE) needs the body's queue: the full path checks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from schedweb.api.limits import TooManyPendingJobs
from schedweb.api.manifests_base import JOB_API, PODGROUP_API
from schedweb.core.job_submission import PendingLimit, max_pending_jobs_per_user
from schedweb.core.validation import check_text
from schedweb.core.waiting_counts import waiting_counts

JOB_KINDS = (("Job", JOB_API), ("PodGroup", PODGROUP_API))


def max_jobs_per_manifest() -> int:
    """settings.MAX_JOBS_PER_MANIFEST (default 500), as schedweb.api.manifests reads it."""
    return int(getattr(settings, "MAX_JOBS_PER_MANIFEST", 500))


def _text(value: Any, max_length: int) -> bool:
    """`value` is text the database can look up (no NUL, no lone surrogate, short enough)."""
    if not isinstance(value, str):
        return False
    try:
        check_text(value, "value", max_length=max_length)
    except ValidationError:
        return False
    return True


def refusal(user: Any, *, keys: Iterable[Any] = (), names: list[tuple[Any, Any]] | None = None
            ) -> TooManyPendingJobs | None:
    """The 429 for `user` when at the waiting-jobs limit, else None (no limit, below it, one of
    `keys` already used, or every one of `names` an existing job). No query when the limit is 0."""
    limit = max_pending_jobs_per_user()
    if limit <= 0 or getattr(user, "pk", None) is None:
        return None
    lookup_keys = [k for k in keys if _text(k, 255)]
    lookup_names = [(ns, n) for ns, n in names or () if _text(ns, 63) and _text(n, 253)]
    if len(lookup_names) > max_jobs_per_manifest():  # refused by the full path anyway: no lookup
        lookup_names = []
    counts = waiting_counts(user_id=user.pk, user_cap=limit, keys=lookup_keys, names=lookup_names)
    if counts.user < limit or counts.known_key:
        return None
    if names is not None and len(lookup_names) == len(names) and counts.names_found == len(set(names)):
        return None
    over = PendingLimit("user", user.get_username(), limit, "MAX_PENDING_JOBS_PER_USER")
    return TooManyPendingJobs(over.message, over.setting)


def check_job(user: Any, key: str | None) -> None:
    """A single submission (or its dry run: no key): raise the 429 at the limit."""
    exc = refusal(user, keys=[key] if key else ())
    if exc is not None:
        raise exc


def check_batch(user: Any, raw_jobs: list[Any]) -> TooManyPendingJobs | None:
    """A batch's items (raw, unvalidated): the 429 each would get at the limit, or None."""
    keys = [raw["idempotency_key"].strip() for raw in raw_jobs
            if isinstance(raw, dict) and isinstance(raw.get("idempotency_key"), str)]
    return refusal(user, keys=[k for k in keys if k])


def check_manifest(user: Any, docs: list[dict]) -> None:
    """A manifest's documents (read, not checked): raise the 429 at the limit when one of its
    jobs (PodGroups, batch Jobs) may be new; a manifest of no job is not gated."""
    names: list[tuple[Any, Any]] = []
    for doc in docs:
        if (doc.get("kind"), doc.get("apiVersion")) in JOB_KINDS:
            meta = doc.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            names.append((meta.get("namespace") or "default", meta.get("name")))
    if not names:
        return
    exc = refusal(user, names=names)
    if exc is not None:
        raise exc

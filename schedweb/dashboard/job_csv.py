"""Any job list as CSV (`?format=csv` on /jobs/ and /jobs/mine/): every job the filters keep, in the
list's order, streamed a chunk at a time so a list of 100,000 jobs costs one chunk of memory."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from schedweb.dashboard.task_table import with_task_counts

CHUNK = 500
HEADER = ("namespace", "name", "queue", "state", "tasks", "running", "waiting", "succeeded", "failed",
          "reason_code", "reason", "submitted_by", "submitted", "finished")
# A cell a spreadsheet would read as a formula is prefixed with a quote (OWASP's CSV injection rule).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class _Echo:
    """csv.writer's file: hands each line back instead of storing it."""

    def write(self, value: str) -> str:
        return value


def safe(value: Any) -> Any:
    """The cell as written: text that starts like a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def rows(jobs: QuerySet) -> Iterator[tuple[Any, ...]]:
    """The header, then one row per job, task counts read per chunk (one query a chunk)."""
    yield HEADER
    ids = list(jobs.values_list("id", flat=True))
    for start in range(0, len(ids), CHUNK):
        chunk_ids = ids[start:start + CHUNK]
        by_id = {j.id: j for j in jobs.model.objects.filter(id__in=chunk_ids)
                 .select_related("queue", "submitted_by")}
        chunk = with_task_counts([by_id[i] for i in chunk_ids if i in by_id])
        for j in chunk:
            yield tuple(safe(v) for v in (
                j.namespace, j.name, j.queue.name, j.phase, j.task_total, j.task_running, j.task_waiting,
                j.task_succeeded, j.task_failed, j.reason_code, j.reason_message,
                j.submitted_by.get_username() if j.submitted_by else "",
                j.created.isoformat(), j.finished.isoformat() if j.finished else ""))


def response(jobs: QuerySet, filename: str) -> StreamingHttpResponse:
    """A streamed text/csv attachment of `jobs` (already filtered and ordered)."""
    writer = csv.writer(_Echo())
    result = StreamingHttpResponse((writer.writerow(r) for r in rows(jobs)), content_type="text/csv")
    result["Content-Disposition"] = f'attachment; filename="{filename}"'
    return result

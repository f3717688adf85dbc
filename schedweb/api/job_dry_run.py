"""POST /api/v1/jobs/?dry_run=true: the submission itself in a rolled-back transaction, then
where the job would go in the next cycle (schedweb.scheduling.submit_preview reads it).

The job goes through the very checks of a real submission (schedweb.api.commands.job_submit:
queue access, the services' validation, defaults such as the globalDefault priority class) in a
savepoint; the state is loaded there, exactly as the next cycle will load it, and the savepoint
is rolled back before the scheduler runs: nothing is kept.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from schedweb.api import commands
from schedweb.core.access import QueueAccess
from schedweb.core.default_queue import default_queue_name, ensure_default_queue
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.submit_preview import preview_conf, preview_jobs


def preview_submission(job_data: dict[str, Any], user: Any, *, now: datetime | None = None) -> dict[str, Any]:
    """Where the job `job_data` would go in the next cycle; nothing is written.

    `job_data` is the validated body of POST /api/v1/jobs/ as schedweb.api.commands.job_submit
    takes it (namespace, name, queue, priority_class by name, tasks, ...; no queue = the default
    queue). Raises what a real submission raises: django ValidationError (400 naming the field)
    and DRF PermissionDenied (403). No Idempotency-Key: a dry run never replays a job.
    """
    now = now or timezone.now()
    conf = preview_conf(now)
    data = dict(job_data)
    data.setdefault("queue", default_queue_name())  # as the API's serializer: absent = DEFAULT_QUEUE
    with transaction.atomic():
        if data["queue"] == default_queue_name():
            ensure_default_queue()  # as a real submission would (rolled back with the rest)
        job, _ = commands.job_submit(access=QueueAccess(user), data=data)
        uid = f"{job.namespace}/{job.name}"
        state = load_state(now)
        transaction.set_rollback(True)  # the job was only needed for the load
    return preview_jobs(state, [uid], now=now, conf=conf)[uid]

"""A small steady arrival process for the demo (DEMO_ARRIVALS=1, set by `make run` only).

Time is cut into slots of DEMO_ARRIVALS_EVERY seconds (default 10: five cycles at the default
period); the first cycle of each slot submits one job through `job_submit`: the slot's shape of
`demo_data.ARRIVAL_SHAPES` (in turn), into its demo queue, named `<shape>-<slot number>`.
Nothing arrives while DEMO_ARRIVALS_MAX_WAITING (default 20) or more jobs wait (Pending or
Inqueue), so the demo never floods however long it runs. Deterministic: the cycles' start times
decide when and what.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ValidationError

from schedweb.core import services
from schedweb.core.demo_data import ARRIVAL_SHAPES
from schedweb.core.models import Job, JobPhase
from schedweb.scheduling.demo import demo_tasks
from schedweb.scheduling.models import CycleRun

logger = logging.getLogger(__name__)

DEFAULT_EVERY = 10.0
DEFAULT_MAX_WAITING = 20
WAITING_PHASES = (JobPhase.PENDING, JobPhase.INQUEUE)


def arrival_settings() -> tuple[float, int]:
    """(seconds per arrival slot, cap on waiting jobs) from the settings, at least (1, 0)."""
    every = float(getattr(settings, "DEMO_ARRIVALS_EVERY", DEFAULT_EVERY))
    cap = int(getattr(settings, "DEMO_ARRIVALS_MAX_WAITING", DEFAULT_MAX_WAITING))
    return max(1.0, every), max(0, cap)


def arrive(run: CycleRun) -> Job | None:
    """After cycle `run`: submit the slot's demo job when `run` is its slot's first cycle; else
    None (also for a skipped cycle, too many waiting jobs, or demo queues a user deleted or
    closed: the process only logs that, the loop goes on)."""
    every, cap = arrival_settings()
    if run.skipped:
        return None
    slot = int(run.started.timestamp() // every)
    previous = (CycleRun.objects.filter(skipped=False, id__lt=run.pk).order_by("-id")
                .values_list("started", flat=True).first())
    if previous is not None and int(previous.timestamp() // every) == slot:
        return None
    if Job.objects.filter(phase__in=WAITING_PHASES).count() >= cap:
        return None
    shape = ARRIVAL_SHAPES[slot % len(ARRIVAL_SHAPES)]
    name = f"{shape['name']}-{slot}"
    extra = {k: shape[k] for k in ("priority_class", "sla_waiting_time", "min_task_member") if k in shape}
    try:
        return services.job_submit(namespace=shape["namespace"], name=name, queue=shape["queue"],
                                   min_member=shape["min_member"], tasks=demo_tasks(shape, name=name),
                                   **extra)
    except ValidationError as exc:  # a deleted or closed demo queue, a clock set back (name taken)
        logger.info("demo arrival %s/%s not submitted: %s", shape["namespace"], name, exc)
        return None

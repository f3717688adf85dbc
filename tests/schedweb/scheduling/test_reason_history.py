"""The reason history's current span quotes the latest cycle's figures, as the job does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core import services
from schedweb.core.models import Job, Queue
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import JobReasonHistory

from .conftest import make_cluster, submit

pytestmark = pytest.mark.django_db


def test_same_code_new_figures_update_the_current_span():
    # One 8-cpu node; queue q capped at 4 cpu. h (2 cpu) binds; the gang g (2 x 2 cpu) is refused
    # with "need 4, 2 left". Then h2 (1 cpu) binds: g still waits for the same code, 1 left.
    make_cluster(nodes=1, cpu="8")
    services.queue_update(queue=Queue.objects.get(name="q"), capability={"cpu": "4"})
    submit("h", tasks=1, cpu="2")
    t0 = timezone.now()
    cycle_run(now=t0)
    submit("g", tasks=2, cpu="2")
    cycle_run(now=t0 + timedelta(seconds=2))
    job = Job.objects.get(name="g")
    assert job.reason_code == "QueueOverDeserved"  # proportion: deserved = min(capability, ...)
    assert "insufficient cpu (need 4, 2 left)" in job.reason_message
    submit("h2", tasks=1, cpu="1")
    cycle_run(now=t0 + timedelta(seconds=4))
    job.refresh_from_db()
    assert "insufficient cpu (need 4, 1 left)" in job.reason_message
    spans = list(JobReasonHistory.objects.filter(job=job).values_list("code", "message", "current"))
    assert spans == [("QueueOverDeserved", job.reason_message, True)]

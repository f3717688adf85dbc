"""Suspend and resume (Volcano's AbortJob / ResumeJob): the tasks are released, the job is never
scheduled while suspended and its reason says so; resumed, it is scheduled again as a gang."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.audit.models import AuditEntry
from schedweb.core.job_services import JobStateConflict, job_cancel, job_resume, job_suspend
from schedweb.core.models import Job, JobPhase
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import QueueSample

from .conftest import make_cluster, requires_postgres, statuses, submit
from .test_incremental import assert_incremental_equals_full

pytestmark = pytest.mark.django_db


def _released() -> None:
    """An agent step past the grace periods: Releasing tasks let go of their nodes."""
    agent_step(now=timezone.now() + timedelta(hours=1))


def test_a_suspended_gang_releases_its_tasks_waits_and_is_scheduled_again_once_resumed():
    make_cluster(nodes=2, cpu="4")
    submit("a", tasks=3, cpu="2")
    cycle_run()
    agent_step()  # Binding -> Running
    assert {s for s, _ in statuses("a").values()} == {"Running"}
    job = job_suspend(job=Job.objects.get(name="a"))
    assert job.phase == JobPhase.ABORTED and job.get_phase_display() == "Suspended"
    assert {s for s, _ in statuses("a").values()} == {"Releasing"}
    assert job.reason_code == "Suspended"
    assert job.reason_message.startswith("suspended by system at ")
    assert job.reason_message.endswith(" UTC; resume it to schedule it again")
    _released()
    assert set(statuses("a").values()) == {("Pending", None)}
    run = cycle_run()
    job.refresh_from_db()
    # Never scheduled while suspended; its reason is left as job_suspend wrote it; no usage.
    assert (run.binds, job.phase, job.reason_code) == (0, JobPhase.ABORTED, "Suspended")
    assert set(statuses("a").values()) == {("Pending", None)}
    assert QueueSample.objects.get(cycle=run, queue="q").allocated in ({}, {"cpu": 0.0, "memory": 0.0})
    job = job_resume(job=job)
    assert (job.phase, job.reason_code, job.reason_message) == (JobPhase.PENDING, "", "")
    run = cycle_run()
    job.refresh_from_db()
    assert run.binds == 3, (job.reason_code, job.reason_message, run.errors)
    assert sorted(s for s, _ in statuses("a").values()) == ["Binding"] * 3
    assert list(AuditEntry.objects.filter(object_key="ns/a").order_by("id").values_list(
        "action", "before__phase", "after__phase")) == [("set_state", "Inqueue", "Aborted"),
                                                         ("set_state", "Aborted", "Pending")]


def test_a_suspended_waiting_job_is_left_out_and_others_get_the_room():
    make_cluster(nodes=1, cpu="4")
    first = submit("first", tasks=1, cpu="4")
    submit("second", tasks=1, cpu="4")
    job_suspend(job=first)
    run = cycle_run()
    assert run.binds == 1
    assert statuses("second") == {"second-0": ("Binding", "n0")}
    assert statuses("first") == {"first-0": ("Pending", None)}
    assert Job.objects.get(name="first").reason_code == "Suspended"


def test_suspend_and_resume_refuse_a_job_in_the_wrong_state():
    make_cluster(nodes=1)
    job = submit("a")
    with pytest.raises(JobStateConflict, match="is not suspended"):
        job_resume(job=job)
    job_suspend(job=job)
    with pytest.raises(JobStateConflict, match="already suspended"):
        job_suspend(job=job)
    job_cancel(job=job)  # a suspended job can be cancelled: its waiting tasks fail
    assert set(statuses("a").values()) == {("Failed", None)}
    with pytest.raises(JobStateConflict, match="already finished"):
        job_suspend(job=job)
    with pytest.raises(JobStateConflict, match="already finished"):
        job_resume(job=job)


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_the_kept_snapshot_follows_a_suspend_and_a_resume():
    make_cluster(nodes=1, cpu="4")
    submit("a", tasks=2)
    cycle_run()
    agent_step()
    job_suspend(job=Job.objects.get(name="a"))
    cycle_run()
    assert_incremental_equals_full()
    _released()
    cycle_run()
    assert_incremental_equals_full()
    job_resume(job=Job.objects.get(name="a"))
    run = cycle_run()
    assert run.binds == 2
    assert_incremental_equals_full()

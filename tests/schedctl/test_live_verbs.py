"""vcctl's verbs against a live server: queue create/delete/operate, job run/suspend/resume/delete,
and a cancel that has nothing to do."""

from __future__ import annotations

import pytest

from schedweb.core.models import Job, JobPhase, Queue
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from tests.schedctl.support import Run
from tests.schedctl.test_live import cluster  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True, reset_sequences=True)


def test_queue_create_operate_delete(cluster):  # noqa: F811
    run = cluster.run
    created = run("queue", "create", "-n", "research", "-w", "3", "--priority", "5", "--reclaimable", "false",
                  "--capability", "cpu=4,memory=8Gi", "--deserved", "cpu=2", "--state", "Closed")
    assert created == Run(0, "queue research created\n", "")
    queue = Queue.objects.get(name="research")
    assert (queue.weight, queue.priority, queue.reclaimable, queue.state) == (3, 5, False, "Closed")
    assert queue.capability == {"cpu": 4000.0, "memory": 8 * 2**30} and queue.deserved == {"cpu": 2000.0}
    assert run("queue", "create", "nlp", "--parent", "research") == Run(0, "queue nlp created\n", "")
    assert Queue.objects.get(name="nlp").parent.name == "research"
    assert run("queue", "operate", "-n", "research", "-a", "open") == Run(0, "queue research opened\n", "")
    assert run("queue", "operate", "research", "-a", "update", "-w", "7", "--guarantee", "cpu=1") == Run(
        0, "queue research updated\n", "")
    queue.refresh_from_db()
    assert (queue.state, queue.weight, queue.guarantee) == ("Open", 7, {"cpu": 1000.0})
    assert run("queue", "operate", "research", "-a", "update") == Run(2, "", (
        "schedctl: --action update needs at least one of --weight, --priority, --reclaimable, "
        "--capability, --deserved, --guarantee\n"))
    assert run("queue", "operate", "research", "-a", "close", "-w", "2") == Run(2, "", (
        "schedctl: --action close takes no settings; use --action update for --weight\n"))
    with pytest.raises(SystemExit) as bad:  # argparse: usage line and message, exit 2
        run("queue", "create", "-n", "x", "--capability", "cpu")
    assert bad.value.code == 2
    assert run("queue", "delete", "-n", "nlp") == Run(0, "queue nlp deleted\n", "")
    assert not Queue.objects.filter(name="nlp").exists()
    assert run("queue", "delete", "nope").code == 1


def test_job_run_suspend_resume_delete(cluster):  # noqa: F811
    run = cluster.run
    made = run("job", "run", "-N", "quick", "-n", "ml", "--queue", "q", "-r", "3", "-m", "2",
               "-R", "cpu=1,memory=1Gi")
    assert made == Run(0, "job ml/quick created (id 1, 3 task(s), min member 2)\n", "")
    job = Job.objects.get(name="quick")
    assert (job.min_member, job.tasks.count()) == (2, 3)
    assert sorted(job.tasks.values_list("name", flat=True)) == [f"quick-main-{i}" for i in range(3)]
    assert job.tasks.first().request == {"cpu": 1000.0, "memory": 2**30}
    assert run("job", "run", "-N", "bad", "-r", "1", "-m", "2") == Run(
        2, "", "schedctl: --min 2 is above --replicas 1\n")
    cycle_run()
    agent_step()
    assert run("job", "suspend", "ml/quick") == Run(
        0, "job ml/quick suspended (its tasks are released; resume it to schedule it again)\n", "")
    job.refresh_from_db()
    assert (job.phase, job.reason_code) == (JobPhase.ABORTED, "Suspended")
    assert set(job.tasks.values_list("status", flat=True)) == {"Releasing"}
    again = run("job", "suspend", "1")
    assert again == Run(1, "", "schedctl: 409 conflict: phase: Job ml/quick is already suspended.\n")
    resumed = run("job", "resume", "1")
    assert resumed == Run(0, "job ml/quick resumed (pending: the next cycle schedules it)\n", "")
    assert Job.objects.get(pk=1).phase == JobPhase.PENDING
    assert run("job", "resume", "1").code == 1
    # delete: cancelled (its tasks are still releasing), so not deleted yet: exit 1, said why.
    gone = run("job", "delete", "ml/quick")
    assert gone.code == 1 and gone.err.startswith("schedctl: job ml/quick cancelled but not deleted: ")
    assert Job.objects.get(pk=1).phase == JobPhase.CANCELLED
    Job.objects.get(pk=1).tasks.update(status="Failed", node=None)
    assert run("job", "delete", "1") == Run(0, "job ml/quick deleted\n", "")
    assert not Job.objects.exists()


def test_cancelling_a_finished_job_is_an_error(cluster):  # noqa: F811
    run = cluster.run
    assert run("job", "run", "-N", "a", "-n", "ml", "--queue", "q").code == 0
    assert run("job", "cancel", "ml/a") == Run(0, "job ml/a cancelled\n", "")
    assert run("job", "cancel", "ml/a") == Run(
        1, "", "schedctl: job ml/a has already finished (Cancelled): nothing to cancel\n")

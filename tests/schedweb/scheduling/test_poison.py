"""One bad job never stops the cluster (issue 15): the cycle sets it aside, health and metrics say so.

The poison rows are written straight through the ORM, as data stored before the input checks
existed (or by a bug) would be: the cycle must survive what the API would refuse.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from schedweb.core.models import Job, Queue, Task
from schedweb.scheduling import tasks as scheduling_tasks
from schedweb.scheduling.agent import agent_step
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun

from .conftest import make_cluster, statuses, submit

pytestmark = pytest.mark.django_db

POISON_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}


def poison_job(name: str = "poison", affinity=POISON_AFFINITY, request=None) -> Job:
    """A job whose one task (no request) carries a malformed affinity, bypassing the services."""
    job = Job.objects.create(namespace="ns", name=name, queue=Queue.objects.get(name="q"), min_member=1,
                             phase="Inqueue")
    Task.objects.create(job=job, name=f"{name}-0", request=request or {}, affinity=affinity)
    return job


def test_poison_job_beside_healthy_ones_they_bind_in_the_same_cycle(client, admin_user, caplog):
    make_cluster(nodes=2)
    poison_job()
    submit("a", tasks=2)
    submit("b", tasks=1)
    with caplog.at_level(logging.ERROR, logger="schedweb.scheduling.cycle"):
        run = cycle_run()
        again = cycle_run()
    assert run.errors == "" and run.job_errors == 1 and again.errors == ""
    assert run.binds == 3
    assert {s for s, _ in statuses("a").values()} == {"Binding"}
    assert statuses("b")["b-0"][0] == "Binding"
    poison = Job.objects.get(name="poison")
    assert poison.reason_code == "InvalidJob"
    assert poison.reason_message.startswith(
        "job is invalid: affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    assert poison.reason_details["error"]["where"] == "screen"
    # Logged once, not once per cycle.
    logged = [r for r in caplog.records if "ns/poison" in r.getMessage()]
    assert len(logged) == 1
    # Health stays ok (the cycle ran for everybody), metrics count the job, the page shows why.
    assert client.get("/healthz").json()["scheduler"]["state"] == "ok"
    assert client.get("/healthz").json()["scheduler"]["jobs_set_aside"] == 1
    metrics = client.get("/metrics").content.decode().splitlines()
    assert "schedweb_jobs_set_aside 1.0" in metrics
    assert 'schedweb_pending_jobs{reason="InvalidJob"} 1.0' in metrics
    client.force_login(admin_user)
    page = client.get("/jobs/ns/poison/").content.decode()
    assert "Invalid job" in page
    assert poison.reason_message in page


def test_dry_run_survives_the_poison_job(client, admin_user):
    make_cluster(nodes=1)
    poison_job()
    submit("a", tasks=1)
    client.force_login(admin_user)
    response = client.post("/api/v1/scheduler-config/dry-run/", {"yaml": ""}, content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["binds"] == {"ns/a/a-0": "n0"}
    assert body["reasons"]["ns/poison"]["code"] == "InvalidJob"


def test_agent_survives_an_overflowing_duration():
    """Issue 15 finding 2: duration 1e308 made every agent step raise OverflowError."""
    make_cluster(nodes=1)
    submit("a", tasks=2, duration=10)
    submit("b", tasks=1, duration=5)
    t0 = timezone.now()
    cycle_run(now=t0)
    # What rows stored before the input bounds existed may hold (the API refuses both now).
    Task.objects.filter(name="a-0").update(duration=1e308)
    Task.objects.filter(name="a-1").update(duration=float("inf"))
    agent_step(now=t0, period=2)
    step = agent_step(now=t0 + timedelta(seconds=5), period=2)
    assert step.succeeded == 1
    assert statuses("a") == {"a-0": ("Running", "n0"), "a-1": ("Running", "n0")}
    assert statuses("b")["b-0"][0] == "Succeeded"


@pytest.mark.parametrize(("failures", "state"), [
    ([], "ok"),
    (["boom"], "degraded"),                    # the latest cycle failed
    (["", "boom"], "ok"),                      # one old failure, since recovered
    (["", "boom", "", "boom"], "degraded"),    # failing repeatedly, even if not every time
])
def test_health_degrades_when_cycles_fail_repeatedly(client, failures, state):
    now = timezone.now()
    for i, error in enumerate(reversed(failures or [""])):
        CycleRun.objects.create(started=now - timedelta(seconds=0.5 * (len(failures) - i)), errors=error)
    body = client.get("/healthz").json()
    assert body["scheduler"]["state"] == state
    assert body["scheduler"]["recent_cycle_failures"] == sum(1 for e in failures if e)


def test_health_degrades_when_the_agent_keeps_failing(client, settings, monkeypatch):
    settings.SIMULATED_AGENT = True
    make_cluster(nodes=1)

    def broken(**_: object) -> None:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(scheduling_tasks, "agent_step", broken)
    out = scheduling_tasks.cycle_and_agent()
    assert out["agent_error"] == "OverflowError: date value out of range"
    body = client.get("/healthz").json()
    assert body["status"] == "degraded"
    assert body["scheduler"]["recent_agent_failures"] == 1
    assert "schedweb_agent_failures_total 1.0" in client.get("/metrics").content.decode().splitlines()

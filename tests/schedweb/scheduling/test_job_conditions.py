"""PodGroup conditions stored by the cycle: one row per job and type, written only when the words
change (the transition time stays meanwhile), shown by the job API as `status.conditions` and
exported as the PodGroup's / Job's `status.conditions`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_core.result import PodGroupCondition, SessionResult
from schedweb.core import services
from schedweb.core.models import Job, Queue
from schedweb.scheduling import job_conditions
from schedweb.scheduling.adapter import JobRow, LoadedState
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import JobCondition

from .conftest import make_cluster, submit

pytestmark = pytest.mark.django_db
UNSCHEDULABLE = ("Unschedulable", "True", "NotEnoughResources",
                 "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable")


def rows() -> dict[str, tuple]:
    return {f"{c.job.name}:{c.type}": (c.type, c.status, c.reason, c.message, c.last_transition_time)
            for c in JobCondition.objects.select_related("job")}


def test_conditions_are_written_when_they_change_and_keep_their_time():
    make_cluster(nodes=1, cpu="4")
    submit("small", tasks=2, cpu="1")
    submit("big", tasks=3, cpu="3")
    t0 = timezone.now().replace(microsecond=0)
    cycle_run(now=t0)
    first = rows()
    assert first["small:Scheduled"][:4] == ("Scheduled", "True", "tasks in gang are ready to be scheduled",
                                            "")
    assert first["big:Unschedulable"] == (*UNSCHEDULABLE, t0)
    with CaptureQueriesContext(connection) as queries:
        cycle_run(now=t0 + timedelta(seconds=2))
    assert rows() == first  # same words: no write, the first transition time stays
    assert not [q for q in queries.captured_queries if "jobcondition" in q["sql"].lower()]
    # The big gang fits once the node grows: Scheduled is added, the Unschedulable entry stays.
    services.node_update(node=services_node("n0"), allocatable={"cpu": "16", "memory": "32Gi", "pods": 110})
    t2 = t0 + timedelta(seconds=4)
    cycle_run(now=t2)
    now = rows()
    assert now["big:Scheduled"][4] == t2 and now["big:Unschedulable"] == first["big:Unschedulable"]


def services_node(name: str):
    from schedweb.core.models import Node

    return Node.objects.get(name=name)


def test_a_forgotten_memory_is_rebuilt_from_the_table_and_a_job_delete_takes_its_rows():
    make_cluster(nodes=1, cpu="4")
    submit("big", tasks=3, cpu="3")
    t0 = timezone.now().replace(microsecond=0)
    cycle_run(now=t0)
    job_conditions.forget()
    cycle_run(now=t0 + timedelta(seconds=2))
    assert rows()["big:Unschedulable"] == (*UNSCHEDULABLE, t0)
    with connection.cursor() as cursor:  # raw SQL too: the foreign key cascades in the database
        cursor.execute("DELETE FROM scheduling_jobreasonhistory")
        cursor.execute("DELETE FROM core_task")
        cursor.execute("DELETE FROM core_job")
    assert not JobCondition.objects.exists()


def test_the_api_and_the_export_show_status_conditions():
    make_cluster(nodes=1, cpu="4")
    submit("big", tasks=3, cpu="3")
    t0 = timezone.now().replace(microsecond=0)
    cycle_run(now=t0)
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("ops", password="pw", is_staff=True))
    job = Job.objects.get(name="big")
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    expected = [{"type": UNSCHEDULABLE[0], "status": "True", "reason": UNSCHEDULABLE[2],
                 "message": UNSCHEDULABLE[3], "lastTransitionTime": t0.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    assert body["status"] == {"conditions": expected}
    for kind in ("PodGroup", "Job"):
        response = client.get(f"/api/v1/manifests/export/?kind={kind}")
        docs = [d for d in yaml.safe_load_all(response.content.decode()) if d["kind"] == kind]
        assert docs[0]["status"] == {"conditions": expected}
        # The exported document imports again (status is what the cluster reports, not spec).
        again = client.generic("POST", "/api/v1/manifests/import/?dry_run=true",
                               response.content, content_type="application/yaml")
        assert again.status_code == 200, again.content


def test_only_conditions_whose_words_differ_from_the_table_are_listed():
    queue = Queue.objects.create(name="q")
    a, b, c = (Job.objects.create(namespace="ns", name=n, queue=queue) for n in "abc")
    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    ready = ("True", "tasks in gang are ready to be scheduled", "")
    job_conditions.write([(a.id, "Scheduled", ready, t0), (a.id, "Unschedulable", UNSCHEDULABLE[1:], t0),
                          (b.id, "Unschedulable", UNSCHEDULABLE[1:], t0)])
    jobs = {f"ns/{j.name}": JobRow(j.id, phase, "", "", {}, None, "volcano")
            for j, phase in ((a, "Running"), (b, "Inqueue"), (c, "Completed"))}
    state = LoadedState(snapshot=None, jobs=jobs, full=True)  # type: ignore[arg-type]
    later = t0.timestamp() + 60
    result = SessionResult(conditions={
        "ns/a": PodGroupCondition("Unschedulable", "NotEnoughResources", "1/3 left", later),  # new words
        "ns/b": PodGroupCondition("Unschedulable", *UNSCHEDULABLE[2:], later),  # as stored
        "ns/c": PodGroupCondition("Scheduled", ready[1], "", later),  # a finished job: not written
        "ns/gone": PodGroupCondition("Scheduled", ready[1], "", later)})  # not loaded
    at = datetime.fromtimestamp(int(later), tz=UTC)
    assert job_conditions.changed(state, result) == [
        (a.id, "Unschedulable", ("True", "NotEnoughResources", "1/3 left"), at)]
    state.full = False  # from memory now: each type of a job is compared with its own row
    result.conditions["ns/a"] = PodGroupCondition("Unschedulable", *UNSCHEDULABLE[2:], later)
    result.conditions["ns/b"] = PodGroupCondition("Scheduled", ready[1], "", later)
    assert job_conditions.changed(state, result) == [(b.id, "Scheduled", ready, at)]

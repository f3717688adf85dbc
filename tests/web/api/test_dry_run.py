"""POST /api/v1/scheduler-config/dry-run/: one session on the current state, nothing written."""

from __future__ import annotations

from schedweb.core.models import Job, Task
from schedweb.scheduling.models import CycleRun

from .conftest import job_body, make_node, make_queue

BINPACK_ONLY = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: proportion}, {name: predicates}, {name: binpack}]
"""


def _cluster(client):
    make_queue("leaf", make_queue("team"))
    make_node("n1", cpu="4", memory="16Gi")
    make_node("n2", cpu="8", memory="16Gi")
    assert client.post("/api/v1/jobs/", job_body("leaf", tasks=2), format="json").status_code == 201


def test_dry_run_reports_binds_and_writes_nothing(make_user, client_for):
    client = client_for(make_user("ops", staff=True))
    _cluster(client)
    response = client.post("/api/v1/scheduler-config/dry-run/", {"yaml": BINPACK_ONLY}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    # binpack prefers the node that ends fuller: both 1-cpu tasks go to n1 (4 cpu) over n2 (8 cpu).
    assert body["binds"] == {"ns1/job1/job1-0": "n1", "ns1/job1/job1-1": "n1"}
    assert body["job_phase_changes"] == {"ns1/job1": {"from": "Pending", "to": "Inqueue"}}
    assert body["queues"]["leaf"]["allocated"] == {"cpu": 2.0, "memory": 2.0 * 2**30}
    assert body["queues_before"] == {} and body["config_version"] is None
    # Nothing was written: no cycle, tasks and job untouched.
    assert CycleRun.objects.count() == 0
    assert set(Task.objects.values_list("status", flat=True)) == {"Pending"}
    assert Job.objects.get().phase == "Pending"


def test_dry_run_refuses_bad_config_and_non_staff(make_user, client_for):
    staff = client_for(make_user("ops", staff=True))
    bad = staff.post("/api/v1/scheduler-config/dry-run/", {"yaml": "actions: 'enqueue, teleport'"},
                     format="json")
    assert bad.status_code == 400 and "teleport" in bad.json()["error"]["fields"]["yaml"][0]
    other = client_for(make_user("bob"))
    assert other.post("/api/v1/scheduler-config/dry-run/", {}, format="json").status_code == 403

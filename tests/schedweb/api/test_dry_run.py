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


def _affinity_heavy(queue: str, tasks: int = 6, terms: int = 8) -> dict:
    """A gang whose tasks carry `terms` preferred pod affinity and anti-affinity terms each."""
    def term(i: int) -> dict:
        expr = {"key": "app", "operator": "In", "values": [f"v{i}", f"w{i}"]}
        return {"weight": 1 + i, "podAffinityTerm": {"labelSelector": {"matchExpressions": [expr]},
                                                     "topologyKey": "kubernetes.io/hostname"}}
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    affinity = {"podAffinity": {pref: [term(i) for i in range(terms)]},
                "podAntiAffinity": {pref: [term(i + terms) for i in range(terms)]}}
    body = job_body(queue, "heavy", tasks=tasks)
    for t in body["tasks"]:
        t["affinity"] = affinity
    return body


def test_dry_run_defers_a_job_over_the_work_budget(make_user, client_for, settings):
    """Issue 33 finding 1: the dry run is bounded as a cycle is; the costly job is Deferred."""
    client = client_for(make_user("ops", staff=True))
    _cluster(client)
    assert client.post("/api/v1/jobs/", _affinity_heavy("leaf"), format="json").status_code == 201
    settings.SCHEDULER_WORK_BUDGET = 40  # 2 nodes x (1 + 16 rules) = 34 units per look
    body = client.post("/api/v1/scheduler-config/dry-run/", {}, format="json").json()
    assert body["reasons"]["ns1/heavy"]["code"] == "Deferred"
    assert body["work"]["deferred"] == {"ns1/heavy": body["reasons"]["ns1/heavy"]["details"]["work_units"]}
    assert sorted(body["binds"]) == ["ns1/job1/job1-0", "ns1/job1/job1-1"]  # the other job as ever
    settings.SCHEDULER_WORK_BUDGET = 0  # unlimited: the same cluster places the heavy gang too
    body = client.post("/api/v1/scheduler-config/dry-run/", {}, format="json").json()
    assert not body["work"]["deferred"] and len(body["binds"]) == 8


def test_submission_preview_of_a_costly_job_answers_deferred(make_user, client_for):
    """POST /api/v1/jobs/?dry_run=true: the process budget bounds the preview's session too."""
    from scheduler_core.framework.work_budget import set_default_budget

    client = client_for(make_user("ops", staff=True))
    _cluster(client)
    set_default_budget(40)
    try:
        response = client.post("/api/v1/jobs/?dry_run=true", _affinity_heavy("leaf"), format="json")
    finally:
        set_default_budget(None)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["placement"] == "pending" and answer["reason"]["code"] == "Deferred"
    assert "work budget" in answer["reason"]["message"]
    assert not Job.objects.filter(name="heavy").exists()

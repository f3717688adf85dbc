"""POST /api/v1/queues/{name}/preview/: what a queue change would do in the next cycle (issue 20)."""

from __future__ import annotations

import pytest
from django.db import connection

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import Job, Queue, Task
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.default_conf import NAMED_CONFS
from schedweb.scheduling.models import CycleRun, QueueSample

from .conftest import make_node, make_queue

# Exact nodes and task order: PostgreSQL keeps microseconds (SQLite's julianday() reads lose them,
# so the creation-time ties that order tasks by name fall differently); the change log is PostgreSQL's.
pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")]
GI = 2**30


def _job(queue: str, tasks: int = 16) -> None:
    """Elastic job `ns/<queue>` (min member 1) of `tasks` x (1 cpu, 256Mi): 16 cpu, 4Gi asked."""
    services.job_submit(namespace="ns", name=queue, queue=queue, min_member=1,
                        tasks=[{"name": f"{queue}-{i}", "request": {"cpu": "1", "memory": "256Mi"}}
                               for i in range(tasks)])


def _nodes() -> None:
    for name in ("n0", "n1", "n2"):
        make_node(name, cpu="4", memory="16Gi")  # 12 cpu, 48Gi in all


def fig(deserved: dict, allocated: dict, weight: int = 1, *, share: float = 1.0, real: dict | None = None,
        capability: dict | None = None) -> dict:
    """The figures of one queue as the preview writes them."""
    return {"deserved": deserved, "real_capability": real or {"cpu": 12, "memory": 48 * GI},
            "allocated": allocated, "capability": capability, "guarantee": None, "weight": weight,
            "share": share, "overused": False}


def _written() -> tuple:
    """Everything a preview must leave as it was."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(id) FROM scheduling_change")
        log = cursor.fetchone()
    return (log, list(Queue.objects.order_by("name").values_list("name", "weight", "deserved", "updated")),
            AuditEntry.objects.count(), Job.objects.count(),
            sorted(Task.objects.values_list("name", "status")), CycleRun.objects.count(),
            QueueSample.objects.count())


def test_raising_a_weight_under_proportion_moves_the_others_deserved(make_user, client_for):
    # Volcano's default conf (flat proportion). a, b, c (weight 1) each ask 16 cpu and 4Gi on a
    # 12-cpu, 48Gi cluster: every queue asks more cpu than any share, so
    #   deserved_cpu(q) = 12 * w(q) / (w(a) + w(b) + w(c)):   before 12 * 1/3 = 4 each;
    #   after a's weight 2: a = 12 * 2/4 = 6, b = c = 12 * 1/4 = 3.
    # Memory: a share (48Gi * w / sum w = 16Gi or more) is above the 4Gi asked, so
    # deserved_memory = the request, 4Gi, before and after. allocate then fills each queue up
    # to its deserved cpu with 1-cpu tasks: a 4 -> 6 tasks, b and c 4 -> 3.
    services.scheduler_config_activate(yaml=NAMED_CONFS["volcano-default"][0])
    _nodes()
    for name in ("a", "b", "c"):
        make_queue(name)
        _job(name)
    client = client_for(make_user("ops", staff=True))
    before = _written()
    response = client.post("/api/v1/queues/a/preview/", {"weight": 2}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert _written() == before  # nothing written: rows, audit, change log
    four, three = {"cpu": 4, "memory": 4 * GI}, {"cpu": 3, "memory": 4 * GI}
    assert (body["queue"], body["valid"], body["violations"], body["config_version"]) == ("a", True, {}, 1)
    assert body["changes"] == {"weight": {"before": 1, "after": 2}}
    assert body["queues"] == [
        {"name": "a", "parent": None, "role": "queue", "changed": True,
         "before": fig(four, {"cpu": 4, "memory": GI}),
         "after": fig({"cpu": 6, "memory": 4 * GI}, {"cpu": 6, "memory": 1.5 * GI}, weight=2)},
        {"name": "b", "parent": None, "role": "sibling", "changed": True,
         "before": fig(four, {"cpu": 4, "memory": GI}), "after": fig(three, {"cpu": 3, "memory": 0.75 * GI})},
        {"name": "c", "parent": None, "role": "sibling", "changed": True,
         "before": fig(four, {"cpu": 4, "memory": GI}), "after": fig(three, {"cpu": 3, "memory": 0.75 * GI})},
        # The DEFAULT_QUEUE, a sibling at the top level; proportion has no figures for a queue without jobs.
        {"name": "default", "parent": None, "role": "sibling", "changed": False, "before": None,
         "after": None},
    ]
    ids = dict(Job.objects.values_list("name", "id"))
    # Tasks go by their pod index (a-0, a-1, ..., a-9, a-10): a gains a-4, a-5; b and c lose their 4th.
    assert body["jobs"] == {
        "starting": [{"job": "ns/a", "id": ids["a"], "queue": "a", "tasks": {"a-4": "n2", "a-5": "n2"}}],
        "not_starting": [{"job": "ns/b", "id": ids["b"], "queue": "b", "tasks": {"b-3": "n1"}},
                         {"job": "ns/c", "id": ids["c"], "queue": "c", "tasks": {"c-3": "n2"}}],
        "losing": [], "not_losing": []}
    # The real change, then the real cycle, agree: a binds 6 tasks, b and c 3 each.
    assert client.patch("/api/v1/queues/a/", {"weight": 2}, format="json").status_code == 200
    cycle_run()
    bound = {name for name, status in Task.objects.values_list("name", "status") if status == "Binding"}
    assert {n for n in bound if n.startswith("a-")} == {"a-0", "a-1", "a-2", "a-3", "a-4", "a-5"}
    assert {n for n in bound if n.startswith("b-")} == {"b-0", "b-1", "b-2"}
    assert {n for n in bound if n.startswith("c-")} == {"c-0", "c-1", "c-2"}


def _team() -> None:
    """team > {x, y}, each leaf deserving 4 cpu, each asking 16 cpu (shipped conf: hierarchical capacity)."""
    _nodes()
    team = make_queue("team")
    make_queue("x", team, deserved={"cpu": "4"})
    make_queue("y", team, deserved={"cpu": "4"})
    _job("x")
    _job("y")


def test_under_hierarchical_capacity_a_weight_changes_nothing_and_a_deserved_does(make_user, client_for):
    # Capacity shares by deserved, not weight: deserved = max(min(spec deserved, real capability),
    # guarantee) = the spec's 4 cpu (memory unset: 0); no capability anywhere, so every real
    # capability is the cluster's 12 cpu, 48Gi. allocate fills the cluster taking the queue with the
    # lower allocated / deserved first: 6 + 6 (share 1.5 each) with 4 + 4; with x deserving 8,
    # x takes 8 and y 4 (shares 1.0 and 1.0). Tasks go in name order (x-0, x-1, x-10, ..., x-13
    # are the first six): x gains x-14, x-15; y keeps y-0, y-1, y-10, y-11 and loses y-12, y-13.
    _team()
    client = client_for(make_user("ops", staff=True))
    whole = {"cpu": 12, "memory": 48 * GI}
    parent = fig({"cpu": 0, "memory": 0}, {"cpu": 12, "memory": 3 * GI}, capability=whole)
    x_before = fig({"cpu": 4, "memory": 0}, {"cpu": 6, "memory": 1.5 * GI}, share=1.5, capability=whole)
    weight = client.post("/api/v1/queues/x/preview/", {"weight": 3}, format="json").json()
    assert weight["changes"] == {"weight": {"before": 1, "after": 3}}
    assert weight["queues"] == [
        {"name": "team", "parent": None, "role": "ancestor", "changed": False, "before": parent,
         "after": parent},
        {"name": "x", "parent": "team", "role": "queue", "changed": True, "before": x_before,
         "after": {**x_before, "weight": 3}},  # only the weight it reports
        {"name": "y", "parent": "team", "role": "sibling", "changed": False, "before": x_before,
         "after": x_before},
    ]
    assert weight["jobs"] == {"starting": [], "not_starting": [], "losing": [], "not_losing": []}

    deserved = client.post("/api/v1/queues/x/preview/", {"deserved": {"cpu": "8"}}, format="json").json()
    assert deserved["changes"] == {"deserved": {"before": {"cpu": 4}, "after": {"cpu": 8}}}
    assert deserved["queues"] == [
        {"name": "team", "parent": None, "role": "ancestor", "changed": False, "before": parent,
         "after": parent},
        {"name": "x", "parent": "team", "role": "queue", "changed": True, "before": x_before,
         "after": fig({"cpu": 8, "memory": 0}, {"cpu": 8, "memory": 2 * GI}, capability=whole)},
        {"name": "y", "parent": "team", "role": "sibling", "changed": True, "before": x_before,
         "after": fig({"cpu": 4, "memory": 0}, {"cpu": 4, "memory": GI}, capability=whole)},
    ]
    starting, not_starting = deserved["jobs"]["starting"], deserved["jobs"]["not_starting"]
    assert [(e["job"], sorted(e["tasks"])) for e in starting] == [("ns/x", ["x-6", "x-7"])]
    assert [(e["job"], sorted(e["tasks"])) for e in not_starting] == [("ns/y", ["y-4", "y-5"])]
    # The real change and cycle bind what the preview said, where it said.
    assert client.patch("/api/v1/queues/x/", {"deserved": {"cpu": "8"}}, format="json").status_code == 200
    cycle_run()
    placed = dict(Task.objects.filter(status="Binding").values_list("name", "node__name"))
    assert all(placed.get(task) == node for task, node in starting[0]["tasks"].items())
    assert not set(not_starting[0]["tasks"]) & set(placed)
    assert len(placed) == 12


@pytest.mark.parametrize("body,violations", [
    ({"capability": {"cpu": "2"}}, {"deserved": ["Deserved cpu 4 is above the capability cpu 2."]}),
    ({"guarantee": {"cpu": "5"}}, {"guarantee": ["Guarantee cpu 5 is above the deserved cpu 4."]}),
    ({"parent": "nope"}, {"parent": ["Unknown queue 'nope'."]}),
])
def test_a_change_the_services_refuse_lists_the_violations_and_writes_nothing(make_user, client_for, body,
                                                                              violations):
    _team()
    client = client_for(make_user("ops", staff=True))
    before = _written()
    response = client.post("/api/v1/queues/x/preview/", body, format="json")
    assert response.status_code == 200
    assert {k: v for k, v in response.json().items() if k != "computed_at"} == {
        "queue": "x", "valid": False, "violations": violations, "config_version": None, "changes": {},
        "queues": [], "losses": [], "warnings": [],
        "jobs": {"starting": [], "not_starting": [], "losing": [], "not_losing": []}}
    assert _written() == before


def test_access_and_input_are_the_edits_own(make_user, client_for):
    _team()
    admin = make_user("team-admin")
    services.queue_update(queue=Queue.objects.get(name="team"), admin_users=[admin])
    submitter = make_user("sub")
    services.queue_update(queue=Queue.objects.get(name="x"), submitter_users=[submitter])
    # An admin of the parent may preview (and edit) the leaf.
    allowed = client_for(admin).post("/api/v1/queues/x/preview/", {"weight": 2}, format="json")
    assert allowed.status_code == 200
    refused = client_for(submitter).post("/api/v1/queues/x/preview/", {"weight": 2}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "Only admins of queue x or its ancestors may change it."
    staff = client_for(make_user("ops", staff=True))
    bad = staff.post("/api/v1/queues/x/preview/", {"weight": 0}, format="json")
    assert (bad.status_code, bad.json()["error"]["fields"]) == (400,
                                                               {"weight": ["Weight must be at least 1."]})
    unknown = staff.post("/api/v1/queues/x/preview/", {"colour": "red"}, format="json")
    assert (unknown.status_code, list(unknown.json()["error"]["fields"])) == (400, ["colour"])
    missing = staff.post("/api/v1/queues/nope/preview/", {"weight": 2}, format="json")
    assert (missing.status_code, missing.json()["error"]["message"]) == (404, "No queue 'nope'.")
    assert client_for(None).post("/api/v1/queues/x/preview/", {}, format="json").status_code == 401


def test_renaming_and_moving_a_queue(make_user, client_for):
    _team()
    other = make_queue("other")
    client = client_for(make_user("ops", staff=True))
    body = client.post("/api/v1/queues/y/preview/", {"name": "z", "parent": other.name}, format="json").json()
    assert body["valid"] and body["queue"] == "z"
    assert body["changes"] == {"name": {"before": "y", "after": "z"},
                               "parent": {"before": "team", "after": "other"}}
    roles = [(q["name"], q["parent"], q["role"]) for q in body["queues"]]
    # Old and new ancestors, the queue under its new name, its siblings before (x) and after (none).
    assert roles == [("other", None, "ancestor"), ("team", None, "ancestor"), ("z", "other", "queue"),
                     ("x", "team", "sibling")]
    z = body["queues"][2]
    assert (z["before"]["allocated"], z["after"]["allocated"]) == ({"cpu": 6, "memory": 1.5 * GI},
                                                                   {"cpu": 0, "memory": 0})
    # Two best-effort top-level queues (no deserved: share 1 each) go in creation order: team's x
    # takes the whole cluster, the moved queue nothing.
    starting, not_starting = body["jobs"]["starting"], body["jobs"]["not_starting"]
    assert [(e["job"], e["queue"], sorted(e["tasks"])) for e in starting] == [
        ("ns/x", "x", ["x-10", "x-11", "x-6", "x-7", "x-8", "x-9"])]
    assert [(e["job"], e["queue"], sorted(e["tasks"])) for e in not_starting] == [
        ("ns/y", "z", ["y-0", "y-1", "y-2", "y-3", "y-4", "y-5"])]
    patched = client.patch("/api/v1/queues/y/", {"name": "z", "parent": "other"}, format="json")
    assert patched.status_code == 200
    cycle_run()
    placed = dict(Task.objects.filter(status="Binding").values_list("name", "node__name"))
    assert set(placed) == {"x-0", "x-1", "x-2", "x-3", "x-4", "x-5", *starting[0]["tasks"]}
    assert all(placed[task] == node for task, node in starting[0]["tasks"].items())

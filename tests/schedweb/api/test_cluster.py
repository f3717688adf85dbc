"""Priority classes, namespace quotas and the scheduler configuration (staff writes)."""

from __future__ import annotations

import pytest

VALID_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def test_priority_classes(staff):
    created = staff.post("/api/v1/priority-classes/", {"name": "high", "value": 1000}, format="json")
    assert created.status_code == 201, created.content
    assert created.json() == {"id": created.json()["id"], "name": "high", "value": 1000,
                              "preemption_policy": "PreemptLowerPriority", "description": "",
                              "global_default": False}
    staff.post("/api/v1/priority-classes/", {"name": "low", "value": 10}, format="json")
    assert [p["name"] for p in staff.get("/api/v1/priority-classes/").json()["results"]] == ["high", "low"]
    duplicate = staff.post("/api/v1/priority-classes/", {"name": "high", "value": 1}, format="json")
    assert duplicate.status_code == 400 and "name" in duplicate.json()["error"]["fields"]
    bad = staff.post("/api/v1/priority-classes/", {"name": "x", "value": 1, "preemption_policy": "Sometimes"},
                     format="json")
    assert bad.status_code == 400 and "preemption_policy" in bad.json()["error"]["fields"]


def test_namespace_quotas(staff):
    created = staff.post("/api/v1/namespace-quotas/",
                         {"namespace": "ns1", "hard": {"cpu": "10", "memory": "1Gi"}}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["hard"] == {"cpu": 10, "memory": 2**30}
    replaced = staff.post("/api/v1/namespace-quotas/", {"namespace": "ns1", "hard": {"cpu": "20"}},
                          format="json")
    # Stored maps keep only the dimensions given: an unset memory quota is not "0".
    assert replaced.json()["hard"] == {"cpu": 20}
    assert staff.get("/api/v1/namespace-quotas/ns1/").json()["hard"] == {"cpu": 20}
    bad = staff.post("/api/v1/namespace-quotas/", {"namespace": "ns2", "hard": {"cpu": "ten"}}, format="json")
    assert bad.status_code == 400 and "hard" in bad.json()["error"]["fields"]


def test_scheduler_config_replace_and_versions(staff, make_user, client_for):
    replaced = staff.put("/api/v1/scheduler-config/", {"yaml": VALID_CONF, "comment": "drf"}, format="json")
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["active"] is True and replaced.json()["comment"] == "drf"
    assert staff.get("/api/v1/scheduler-config/").json()["version"] == replaced.json()["version"]
    bad = staff.put("/api/v1/scheduler-config/", {"yaml": "actions: 'enqueue, teleport'\ntiers: []"},
                    format="json")
    assert bad.status_code == 400 and "yaml" in bad.json()["error"]["fields"]
    assert "teleport" in bad.json()["error"]["fields"]["yaml"][0]
    versions = staff.get("/api/v1/scheduler-config/versions/").json()
    assert [v["active"] for v in versions["results"]][:1] == [True]
    # A page at a time, as every list: the next page follows the continue token, no row twice.
    assert staff.put("/api/v1/scheduler-config/", {"yaml": VALID_CONF, "comment": "again"},
                     format="json").status_code == 200
    versions = staff.get("/api/v1/scheduler-config/versions/").json()
    first = staff.get("/api/v1/scheduler-config/versions/?limit=1").json()
    second = staff.get(f"/api/v1/scheduler-config/versions/?limit=1&continue={first['continue']}").json()
    assert first["count"] == versions["count"] >= 2
    assert first["results"][0]["version"] > second["results"][0]["version"]
    reader = client_for(make_user("reader"))
    assert reader.get("/api/v1/scheduler-config/").status_code == 200
    assert reader.put("/api/v1/scheduler-config/", {"yaml": VALID_CONF}, format="json").status_code == 403

"""Hierarchical quota governance: the parent governs what its children take from each other.

The tree is the demo's research subtree: research (capability 200 cpu / 1600Gi / 40 GPU,
deserved 192 / 1536Gi / 40) > nlp (deserved 128 / 1024Gi / 24, guarantee 16 / 64Gi; `lead` is
its admin, not research's) and vision (capability 96 cpu / 16 GPU, deserved 64 / 512Gi / 16).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from schedweb.core import services
from schedweb.core.models import Queue

GPU = "nvidia.com/gpu"
pytestmark = pytest.mark.django_db


@pytest.fixture
def clients() -> dict[str, APIClient]:
    """research > {nlp, vision}; API clients for staff, lead (admin of nlp) and boss (of research)."""
    make = get_user_model().objects.create_user
    users = {"staff": make("staff", is_staff=True), "lead": make("lead"), "boss": make("boss")}
    research = services.queue_create(name="research", capability={"cpu": "200", "memory": "1600Gi", GPU: 40},
                                     deserved={"cpu": "192", "memory": "1536Gi", GPU: 40},
                                     admin_users=[users["boss"]])
    services.queue_create(name="nlp", parent=research, weight=2, priority=1,
                          deserved={"cpu": "128", "memory": "1024Gi", GPU: 24},
                          guarantee={"cpu": "16", "memory": "64Gi"}, admin_users=[users["lead"]])
    services.queue_create(name="vision", parent=research, capability={"cpu": "96", GPU: 16},
                          deserved={"cpu": "64", "memory": "512Gi", GPU: 16})
    out = {}
    for name, user in users.items():
        out[name] = APIClient()
        out[name].force_authenticate(user)
    return out


def _stored() -> list[dict[str, Any]]:
    return list(Queue.objects.order_by("pk").values())


def _refused(response, field: str) -> str:
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == [field], fields
    return fields[field][0]


def test_a_sub_queue_admin_cannot_starve_a_sibling(clients):
    # The probe's change: nlp takes the whole parent. Refused for anyone: the children's
    # deserved would add up past research's.
    before = _stored()
    body = {"deserved": {"cpu": "200", "memory": "1600Gi", GPU: 40},
            "guarantee": {"cpu": "200", "memory": "1600Gi", GPU: 40}}
    for who in ("lead", "staff"):
        response = clients[who].patch("/api/v1/queues/nlp/", body, format="json")
        assert _refused(response, "deserved") == ("The deserved of the child queues of 'research' would add "
                                                  "up to cpu 264, above its deserved cpu 192.")
    assert _stored() == before


@pytest.mark.parametrize(("who", "path", "body", "field", "message"), [
    ("staff", "research", {"deserved": {"cpu": "100", "memory": "1536Gi", GPU: 40}}, "deserved",
     "The deserved of the child queues of 'research' add up to cpu 192, above its deserved cpu 100."),
    ("staff", "vision", {"capability": {"cpu": "300"}}, "capability",
     "Capability cpu 300 is above the capability of ancestor queue 'research': cpu 200."),
    ("staff", "vision", {"deserved": {"cpu": "64", "memory": "600Gi", GPU: 16}}, "deserved",
     "The deserved of the child queues of 'research' would add up to memory 1624Gi, above its deserved "
     "memory 1536Gi."),
    ("lead", "nlp", {"weight": 3}, "weight",
     "Raising the weight of 'nlp' (2 \u2192 3) takes from its siblings under 'research': only admins of "
     "'research' (or staff) may."),
    ("lead", "nlp", {"priority": 5}, "priority",
     "Raising the priority of 'nlp' (1 \u2192 5) takes from its siblings under 'research': only admins of "
     "'research' (or staff) may."),
    ("lead", "nlp", {"reclaimable": False}, "reclaimable",
     "Making 'nlp' not reclaimable keeps what it borrows from its siblings under 'research': only admins "
     "of 'research' (or staff) may."),
    ("lead", "nlp", {"deserved": {"cpu": "128", "memory": "1024Gi", GPU: 24, "example.com/fpga": 2}},
     "deserved", "Raising the deserved example.com/fpga of 'nlp' to 2: 'research' does not bound "
                 "example.com/fpga, so there is no unclaimed share to take; only admins of 'research' (or "
                 "staff) may."),
])
def test_refusals_name_the_rule_and_the_figures(clients, who, path, body, field, message):
    before = _stored()
    assert _refused(clients[who].patch(f"/api/v1/queues/{path}/", body, format="json"), field) == message
    assert _stored() == before


def test_a_parents_capability_is_not_lowered_below_a_childs(clients):
    services.queue_create(name="p", capability={"cpu": "100"})
    services.queue_create(name="k", parent="p", capability={"cpu": "80"})
    response = clients["staff"].patch("/api/v1/queues/p/", {"capability": {"cpu": "50"}}, format="json")
    assert _refused(response, "capability") == (
        "The capability of descendant queue 'k': cpu 80 is above the capability of 'p': cpu 50.")


def test_a_sub_queue_admin_may_lower_and_take_what_is_unclaimed(clients):
    lead = clients["lead"]
    assert lead.patch("/api/v1/queues/nlp/", {"weight": 1, "priority": 0}, format="json").status_code == 200
    # Guarantee up to the parent's capability minus the siblings' claims (vision: deserved 64 cpu,
    # 16 GPU): 136 cpu and 24 GPU, within nlp's own deserved.
    response = lead.patch("/api/v1/queues/nlp/", {"guarantee": {"cpu": "128", "memory": "64Gi", GPU: 24}},
                          format="json")
    assert response.status_code == 200, response.content
    assert Queue.objects.get(name="nlp").guarantee == {"cpu": 128000.0, "memory": 68719476736.0, GPU: 24000.0}
    # Raising back what it lowered is a raise like any other.
    assert _refused(lead.patch("/api/v1/queues/nlp/", {"weight": 2}, format="json"), "weight").startswith(
        "Raising the weight of 'nlp' (1 \u2192 2)")


def test_the_parents_admin_governs_the_children(clients):
    boss = clients["boss"]
    assert boss.patch("/api/v1/queues/nlp/", {"weight": 5, "priority": 9, "reclaimable": False},
                      format="json").status_code == 200
    # research is top level: its parent is the root, which only staff administer.
    assert _refused(boss.patch("/api/v1/queues/research/", {"weight": 2}, format="json"), "weight") == (
        "Raising the weight of 'research' (1 \u2192 2) takes from its siblings under 'root': only staff may, "
        "as for every top-level queue.")
    assert clients["staff"].patch("/api/v1/queues/research/", {"weight": 2}, format="json").status_code == 200


def test_a_sub_queue_admins_guarantee_raise_beyond_the_unclaimed_share_is_refused(clients):
    # research guarantees 100 cpu; vision claims 64 of them (its deserved, although it has no
    # guarantee): nlp's admin may guarantee it 36, the limits alone would allow 100.
    services.queue_update(queue=Queue.objects.get(name="research"),
                          guarantee={"cpu": "100", "memory": "64Gi"})
    response = clients["lead"].patch("/api/v1/queues/nlp/", {"guarantee": {"cpu": "40"}}, format="json")
    assert _refused(response, "guarantee") == (
        "Raising the guarantee cpu of 'nlp' to 40 is above what its siblings leave unclaimed under "
        "'research': cpu 36 (its guarantee 100 minus the siblings' 64); more needs admin rights on "
        "'research'.")
    assert clients["lead"].patch("/api/v1/queues/nlp/", {"guarantee": {"cpu": "36"}},
                                 format="json").status_code == 200
    assert clients["boss"].patch("/api/v1/queues/nlp/", {"guarantee": {"cpu": "100"}},
                                 format="json").status_code == 200


def test_stored_data_breaking_a_rule_stays_editable_toward_validity(clients):
    # Written before the rule existed: the children's deserved cpu add up to 214 > 192.
    Queue.objects.filter(name="nlp").update(deserved={"cpu": 150000.0, "memory": 2**40, GPU: 24000.0})
    staff = clients["staff"]
    assert staff.get("/api/v1/queues/nlp/").status_code == 200
    assert staff.patch("/api/v1/queues/nlp/", {"weight": 3}, format="json").status_code == 200
    assert staff.patch("/api/v1/queues/vision/", {"priority": 2}, format="json").status_code == 200
    closer = {"deserved": {"cpu": "140", "memory": "1Ti", GPU: 24}}
    assert staff.patch("/api/v1/queues/nlp/", closer, format="json").status_code == 200
    worse = {"deserved": {"cpu": "141", "memory": "1Ti", GPU: 24}}
    assert _refused(staff.patch("/api/v1/queues/nlp/", worse, format="json"), "deserved") == (
        "The deserved of the child queues of 'research' would add up to cpu 205, above its deserved cpu 192.")


def test_the_preview_says_who_would_lose_what(clients):
    for i in range(4):
        services.node_create(name=f"n{i}", allocatable={"cpu": "64", "memory": "512Gi", GPU: 16})
    response = clients["lead"].post("/api/v1/queues/nlp/preview/",
                                    {"guarantee": {"cpu": "120", "memory": "64Gi"}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["valid"] is True
    assert [e for e in body["losses"] if e["queue"] == "vision"] == [
        {"queue": "vision", "role": "sibling", "figure": "real_capability", "dim": "cpu", "before": 96.0,
         "after": 80.0}]
    assert body["warnings"] == []
    refused = clients["lead"].post("/api/v1/queues/nlp/preview/", {"weight": 9}, format="json").json()
    assert (refused["valid"], list(refused["violations"])) == (False, ["weight"])


def test_the_edit_form_shows_the_refusal_on_its_field(clients):
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="lead"))
    nlp = Queue.objects.get(name="nlp")
    data = {"weight": "3", "priority": "1", "reclaimable": "on", "capability": "",
            "deserved": '{"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "24"}',
            "guarantee": '{"cpu": "16", "memory": "64Gi"}', "version": str(nlp.version)}
    response = client.post("/queues/nlp/edit/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert ("Raising the weight of &#x27;nlp&#x27; (2 \u2192 3) takes from its siblings under "
            "&#x27;research&#x27;: only admins of &#x27;research&#x27; (or staff) may.") in html
    assert Queue.objects.get(name="nlp").weight == 2
    assert client.post("/queues/nlp/edit/", {**data, "weight": "1"}).status_code == 302

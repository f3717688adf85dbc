"""guarantee <= capability at every level of the queue tree (Volcano's queue webhook and the
capacity plugin's hierarchy checks), on create and update, for the services and the API alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from schedweb.core import services
from schedweb.core.models import Queue


@pytest.fixture
def tree(db) -> dict[str, Queue]:
    """org (capability cpu 100, guarantee cpu 40) > {team-a (guarantee cpu 10) > a1, team-b}."""
    org = services.queue_create(name="org", capability={"cpu": "100", "memory": "400Gi"},
                                guarantee={"cpu": "40"})
    team_a = services.queue_create(name="team-a", parent=org, guarantee={"cpu": "10"})
    return {"org": org, "team-a": team_a, "a1": services.queue_create(name="a1", parent=team_a,
                                                                      guarantee={"cpu": "5"}),
            "team-b": services.queue_create(name="team-b", parent=org)}


SUM_ORG = "The guarantees of the child queues of 'org' would add up to cpu 41, above its guarantee cpu 40."
SUM_TEAM_A = "The guarantees of the child queues of 'team-a' add up to cpu 5, above its"
REFUSED: list[tuple[str, Callable[[dict], Any], str, str]] = [
    ("guarantee above own capability", lambda t: services.queue_create(
        name="q", capability={"cpu": "20"}, guarantee={"cpu": "30"}),
     "guarantee", "Guarantee cpu 30 is above the capability cpu 20."),
    ("deserved above own capability", lambda t: services.queue_create(
        name="q", capability={"memory": "1Gi"}, deserved={"memory": "2Gi"}),
     "deserved", "Deserved memory 2Gi is above the capability memory 1Gi."),
    ("guarantee above own deserved", lambda t: services.queue_create(
        name="q", deserved={"cpu": "4"}, guarantee={"cpu": "5"}),
     "guarantee", "Guarantee cpu 5 is above the deserved cpu 4."),
    ("guarantee above an ancestor's capability", lambda t: services.queue_create(
        name="q", parent=t["a1"].parent, guarantee={"cpu": "101"}),
     "guarantee", "Guarantee cpu 101 is above the capability of ancestor queue 'org': cpu 100."),
    ("siblings' guarantees above the parent's guarantee", lambda t: services.queue_create(
        name="q", parent=t["org"], guarantee={"cpu": "31"}),
     "guarantee", SUM_ORG),
    ("update raises a guarantee above the parent's guarantee", lambda t: services.queue_update(
        queue=t["team-b"], guarantee={"cpu": "31"}),
     "guarantee", SUM_ORG),
    ("update lowers a capability below a descendant's guarantee", lambda t: services.queue_update(
        queue=t["org"], capability={"cpu": "4"}),
     "guarantee", "Guarantee cpu 40 is above the capability cpu 4."),
    ("update lowers a guarantee below the children's", lambda t: services.queue_update(
        queue=t["team-a"], guarantee={"cpu": "4"}),
     "guarantee", f"{SUM_TEAM_A} guarantee cpu 4."),
    ("capability below a grandchild's guarantee", lambda t: services.queue_update(
        queue=t["team-a"], capability={"cpu": "3"}),
     "guarantee", "Guarantee cpu 10 is above the capability cpu 3."),
    ("capability below the children's guarantees", lambda t: services.queue_update(
        queue=t["team-a"], guarantee=None, capability={"cpu": "4"}),
     "capability", f"{SUM_TEAM_A} capability cpu 4."),
    ("move under a parent whose capability is below the subtree's guarantee", lambda t: services.queue_update(
        queue=t["team-a"], parent=services.queue_create(name="small", capability={"cpu": "6"})),
     "guarantee", "Guarantee cpu 10 is above the capability of ancestor queue 'small': cpu 6."),
]


@pytest.mark.parametrize(("call", "field", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_contradicting_limits_are_refused(tree, call, field, message):
    before = list(Queue.objects.order_by("pk").values())
    with pytest.raises(ValidationError) as caught:
        call(tree)
    errors = caught.value.message_dict
    assert list(errors) == [field], errors
    assert errors[field][0].startswith(message), errors
    if "small" not in {q.name for q in Queue.objects.all()}:
        assert list(Queue.objects.order_by("pk").values()) == before


def test_capability_below_a_grandchilds_guarantee_names_it(tree):
    services.queue_update(queue=tree["a1"], guarantee=None)
    services.queue_create(name="a1x", parent=tree["a1"], guarantee={"cpu": "5"})
    with pytest.raises(ValidationError) as caught:
        services.queue_update(queue=tree["team-a"], guarantee=None, capability={"cpu": "3"})
    assert caught.value.message_dict == {"capability": [
        "The guarantee of descendant queue 'a1x': cpu 5 is above the capability of 'team-a': cpu 3."]}


@pytest.mark.parametrize("kwargs", [
    {"capability": {"cpu": "20"}, "guarantee": {"memory": "64Gi"}},   # no shared dimension: unlimited
    {"capability": {"cpu": "20"}, "deserved": {"cpu": "20"}, "guarantee": {"cpu": "20"}},  # equal is fine
    {"guarantee": {"cpu": "30", "nvidia.com/gpu": 2}},                 # fills org's guarantee exactly
])
def test_consistent_limits_are_accepted(tree, kwargs):
    queue = services.queue_create(name="q", parent=tree["org"], **kwargs)
    assert Queue.objects.filter(pk=queue.pk).exists()


def test_the_api_answers_400_naming_the_field(tree, make_user, client_for):
    client = client_for(make_user("root-admin", staff=True))
    response = client.patch("/api/v1/queues/org/", {"capability": {"cpu": "4"}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "guarantee": ["Guarantee cpu 40 is above the capability cpu 4."]}
    response = client.post("/api/v1/queues/", {"name": "q", "parent": "org", "guarantee": {"cpu": "31"}},
                           format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["guarantee"]

"""Strict list queries (issue 19): an unknown filter value, an unknown ordering or bad paging is a
400 naming the parameter, on every list endpoint; known values still filter."""

from __future__ import annotations

import pytest

from .conftest import make_job, make_node, make_queue

BAD = [
    # (list, query, parameter, message)
    ("jobs", "queue=nope", "queue", "Unknown queue 'nope'."),
    ("jobs", "reason_code=bogus", "reason_code",
     "Select a valid choice. bogus is not one of the available choices."),
    ("jobs", "state=bogus", "state", "Select a valid choice. bogus is not one of the available choices."),
    ("jobs", "phase=Bogus", "phase", "Select a valid choice. Bogus is not one of the available choices."),
    ("jobs", "submitted_by=ghost", "submitted_by", "Unknown user 'ghost'."),
    ("jobs", "ordering=bogus", "ordering",
     "Unknown ordering 'bogus'; this list orders by: created, min_member, name, namespace, phase, "
     "queue__name, updated (prefix '-' for descending)."),
    ("jobs", "ordering=name,-bogus", "ordering", "Unknown ordering '-bogus'"),
    ("jobs", "limit=-1", "limit", "Expected a whole number of at least 1, not '-1'."),
    ("jobs", "limit=0", "limit", "Expected a whole number of at least 1, not '0'."),
    ("jobs", "offset=abc", "offset", "Expected a whole number of at least 0, not 'abc'."),
    ("tasks", "job=999999", "job", "Unknown job '999999'."),
    ("tasks", "job=abc", "job", "Expected a job id, not 'abc'."),
    ("tasks", "node=nope", "node", "Unknown node 'nope'."),
    ("tasks", "status=Bogus", "status", "Select a valid choice. Bogus is not one of the available choices."),
    ("tasks", "ordering=node", "ordering",
     "Unknown ordering 'node'; this list orders by: created, name, status"),
    ("tasks", "limit=x", "limit", "Expected a whole number of at least 1, not 'x'."),
    ("queues", "parent=nope", "parent", "Unknown queue 'nope'."),
    ("queues", "ordering=bogus", "ordering", "Unknown ordering 'bogus'; this list orders by: created, name"),
    ("queues", "offset=-5", "offset", "Expected a whole number of at least 0, not '-5'."),
    ("nodes", "unschedulable=maybe", "unschedulable", "Expected true or false, not 'maybe'."),
    ("nodes", "ordering=labels", "ordering", "Unknown ordering 'labels'"),
    ("priority-classes", "ordering=bogus", "ordering",
     "Unknown ordering 'bogus'; this list orders by: name, value"),
    ("namespace-quotas", "limit=1.5", "limit", "Expected a whole number of at least 1, not '1.5'."),
    ("cycles", "ordering=started", "ordering", "Unknown ordering 'started'; this list orders by: none"),
    ("audit", "offset=x", "offset", "Expected a whole number of at least 0, not 'x'."),
]


@pytest.fixture
def client(make_user, client_for):
    return client_for(make_user("ops", staff=True))


@pytest.mark.parametrize(("endpoint", "query", "param", "message"), BAD,
                         ids=[f"{e}?{q}" for e, q, _, _ in BAD])
def test_bad_list_query_is_400_naming_the_parameter(client, endpoint, query, param, message):
    response = client.get(f"/api/v1/{endpoint}/?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], list(error["fields"])) == ("invalid", [param])
    assert message in error["fields"][param][0]


GOOD = [
    ("jobs", "queue=leaf&reason_code=NeverFits&state=waiting&submitted_by=ops", 1),
    ("jobs", "ordering=-name,created&limit=1&offset=0", 1),
    ("tasks", "node=n1&status=Pending", 0),
    ("queues", "parent=root&ordering=-name", 2),  # top and the default queue
    ("queues", "parent=top", 1),
    ("nodes", "unschedulable=false", 1),
    ("nodes", "unschedulable=0&limit=1000", 1),
]


@pytest.mark.parametrize(("endpoint", "query", "count"), GOOD, ids=[f"{e}?{q}" for e, q, _ in GOOD])
def test_known_values_still_filter(client, endpoint, query, count, make_user):
    from django.contrib.auth import get_user_model

    from schedweb.core.models import Job

    top = make_queue("top")
    leaf = make_queue("leaf", top)
    make_node("n1")
    job = make_job(leaf, "j", user=get_user_model().objects.get(username="ops"), tasks=1)
    Job.objects.filter(pk=job.pk).update(reason_code="NeverFits")
    response = client.get(f"/api/v1/{endpoint}/?{query}")
    assert response.status_code == 200, response.content
    assert response.json()["count"] == count


def test_a_task_list_by_job_id(client):
    job = make_job(make_queue("leaf"), "j", tasks=2)
    body = client.get(f"/api/v1/tasks/?job={job.id}").json()
    assert [t["name"] for t in body["results"]] == ["j-0", "j-1"]

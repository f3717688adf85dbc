"""Keyset pages (`limit` + `continue`) stay consistent while rows arrive: no duplicate, no gap;
a limit above the maximum is a 400 naming it; a foreign token is a 400 naming `continue`."""

from __future__ import annotations

import pytest

from .conftest import make_job, make_queue


def _ids(page: dict) -> list[int]:
    return [row["id"] for row in page["results"]]


@pytest.fixture
def jobs(make_user, client_for):
    queue = make_queue("q")
    made = [make_job(queue, f"j{i:02d}", tasks=1) for i in range(7)]
    return client_for(make_user("staff", staff=True)), queue, made


@pytest.mark.parametrize("ordering", ["", "&ordering=name", "&ordering=-name", "&ordering=phase,-created"])
def test_rows_arriving_between_pages_neither_repeat_nor_hide_a_row(jobs, ordering):
    client, queue, made = jobs
    first = client.get(f"/api/v1/jobs/?limit=3{ordering}").json()
    assert first["count"] == 7 and first["continue"] and first["previous"] is None
    # New jobs arrive at both ends of the name order (and are newer than every job seen).
    make_job(queue, "a-new", tasks=1)
    make_job(queue, "z-new", tasks=1)
    seen, page = _ids(first), first
    while page["next"]:
        assert page["next"].split("?", 1)[1].count("continue=") == 1
        page = client.get(page["next"]).json()
        seen += _ids(page)
    original = {j.pk for j in made}
    assert len(seen) == len(set(seen))                   # no duplicate
    assert original <= set(seen)                         # no gap
    assert page["continue"] is None


def test_offset_pages_drift_where_keyset_pages_do_not(jobs):
    client, queue, _ = jobs
    by_offset = _ids(client.get("/api/v1/jobs/?limit=3&offset=0").json())
    token = client.get("/api/v1/jobs/?limit=3").json()["continue"]
    make_job(queue, "arrived", tasks=1)                  # newest: the head of the default order
    drifted = _ids(client.get("/api/v1/jobs/?limit=3&offset=3").json())
    assert drifted[0] == by_offset[-1]                   # the reproduction: the same id on both pages
    keyset = _ids(client.get(f"/api/v1/jobs/?limit=3&continue={token}").json())
    assert not set(keyset) & set(by_offset)


@pytest.mark.parametrize("path", ["/api/v1/jobs/", "/api/v1/queues/", "/api/v1/tasks/", "/api/v1/nodes/",
                                  "/api/v1/audit/", "/api/v1/cycles/", "/api/v1/priority-classes/"])
def test_a_limit_above_the_maximum_is_a_400_naming_it(jobs, path):
    response = jobs[0].get(path + "?limit=5000")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"limit": [
        "At most 1000 rows per page (MAX_LIMIT), not 5000; follow `continue` for more."]}
    assert jobs[0].get(path + "?limit=1000").status_code == 200


@pytest.mark.parametrize(("query", "message"), [
    ("continue=garbage", "Not a continue token of this list (send back the one a page gave)."),
    ("continue=eyJvIjpbIm5hbWUiLCJpZCJdLCJ2IjpbImEiLDFdfQ",
     "This continue token was made for another ordering; start again without it."),
    ("continue=x&offset=3", "Give continue or offset, not both."),
])
def test_bad_tokens_are_a_400_naming_continue(jobs, query, message):
    response = jobs[0].get(f"/api/v1/jobs/?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"continue": [message]}


def test_every_list_walks_by_continue(jobs):
    client = jobs[0]
    for path in ("/api/v1/queues/", "/api/v1/tasks/", "/api/v1/audit/"):
        page, seen = client.get(path + "?limit=2").json(), []
        seen += _ids(page)
        while page["next"]:
            page = client.get(page["next"]).json()
            seen += _ids(page)
        assert len(seen) == len(set(seen)) == page["count"], path


@pytest.mark.parametrize("ordering", ["started", "-started"])
def test_nullable_columns_page_without_loss(jobs, ordering):
    from django.utils import timezone
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from schedweb.api.pagination import ApiPagination
    from schedweb.core.models import Task

    _, queue, _ = jobs
    job = make_job(queue, "many", tasks=6)
    for task in job.tasks.order_by("id")[:3]:
        Task.objects.filter(pk=task.pk).update(started=timezone.now())
    tasks = Task.objects.order_by(ordering)
    seen, token = [], None
    while True:
        query = "?limit=2" + (f"&continue={token}" if token else "")
        paginator = ApiPagination()
        page = paginator.paginate_queryset(tasks, Request(APIRequestFactory().get("/x/" + query)))
        seen += [t.pk for t in page]
        token = paginator.continue_token()
        if token is None:
            break
    assert sorted(seen) == sorted(Task.objects.values_list("pk", flat=True))
    assert len(seen) == len(set(seen))

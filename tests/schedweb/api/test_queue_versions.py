"""Optimistic versions of queues: the API's ETag / If-Match (412) and the edit form's hidden
version (a stale form is refused, never silently reverting someone else's change)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from schedweb.core import services
from schedweb.core.models import Queue

from .conftest import make_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("ops", staff=True))


def test_get_has_the_version_as_etag_and_every_write_bumps_it(staff):
    queue = make_queue("q")
    response = staff.get("/api/v1/queues/q/")
    assert response["ETag"] == f'"{queue.pk}-1"'
    patched = staff.patch("/api/v1/queues/q/", {"weight": 2}, format="json", HTTP_IF_MATCH=f'"{queue.pk}-1"')
    assert (patched.status_code, patched["ETag"]) == (200, f'"{queue.pk}-2"')
    services.queue_set_state(queue=queue, state="Closed")
    assert staff.get("/api/v1/queues/q/")["ETag"] == f'"{queue.pk}-3"'


@pytest.mark.parametrize("method", ["patch", "put", "delete"])
def test_a_stale_if_match_is_a_412_and_changes_nothing(staff, method):
    queue = make_queue("q")
    services.queue_update(queue=queue, weight=3)  # someone else's change: version 2
    body = {"name": "q", "weight": 1} if method != "delete" else None
    stale = f'"{queue.pk}-1"'
    response = getattr(staff, method)("/api/v1/queues/q/", body, format="json", HTTP_IF_MATCH=stale)
    assert response.status_code == 412
    error = response.json()["error"]
    assert error["code"] == "precondition_failed"
    assert error["message"] == (f'If-Match "{queue.pk}-1" does not name the current version of queue q '
                                f'(ETag "{queue.pk}-2"); read it again and retry.')
    assert Queue.objects.get(pk=queue.pk).weight == 3


@pytest.mark.parametrize("header", [None, "*", 'W/"{pk}-2", "{pk}-9"'])
def test_no_if_match_star_or_a_list_naming_the_current_version_writes(staff, header):
    queue = make_queue("q")
    services.queue_update(queue=queue, weight=3)
    extra = {"HTTP_IF_MATCH": header.format(pk=queue.pk)} if header else {}
    assert staff.patch("/api/v1/queues/q/", {"priority": 4}, format="json", **extra).status_code == 200
    assert staff.delete("/api/v1/queues/q/", **({"HTTP_IF_MATCH": "*"} if header else {})).status_code == 204


def _form(client: Client, name: str) -> dict[str, str]:
    html = client.get(f"/queues/{name}/").content.decode()
    fields = {k: v.replace("&quot;", '"') for k, v in
              re.findall(r'<textarea name="(\w+)"[^>]*>\s*([^<]*)</textarea>', html)}
    for name_, value in re.findall(r'<input type="(?:number|hidden)" name="(\w+)" value="([^"]*)"', html):
        fields[name_] = value
    fields.pop("csrfmiddlewaretoken", None)
    return {**fields, "reclaimable": "on"}


def test_a_stale_form_is_refused_naming_the_conflict(make_user):
    make_queue("q", weight=1)
    client = Client()
    client.force_login(make_user("ops", staff=True))
    mine, theirs = _form(client, "q"), _form(client, "q")
    assert mine["version"] == theirs["version"] == "1"
    assert client.post("/queues/q/edit/", {**theirs, "weight": "5"}).status_code == 302
    response = client.post("/queues/q/edit/", {**mine, "priority": "7"})
    assert response.status_code == 400
    assert ("Queue &#x27;q&#x27; was changed by someone else since this version was read (version 1, now 2); "
            "reload it and make the change again.") in response.content.decode()
    assert (Queue.objects.get(name="q").weight, Queue.objects.get(name="q").priority) == (5, 0)
    fresh = _form(client, "q")
    assert client.post("/queues/q/edit/", {**fresh, "priority": "7"}).status_code == 302
    assert (Queue.objects.get(name="q").weight, Queue.objects.get(name="q").priority) == (5, 7)

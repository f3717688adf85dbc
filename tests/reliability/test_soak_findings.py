"""Bugs the soak's bigger schemathesis budget found, kept as exact regression cases.

Integers outside 32 bits: every integer column the API writes is PostgreSQL `integer`, so such a
value used to reach the INSERT/UPDATE and answer 500 (DataError "integer out of range"). The
services now refuse it with a 400 naming the field, and nothing is written.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from schedweb.core import services
from schedweb.core.models import Job, PriorityClass, Queue

pytestmark = pytest.mark.django_db

TOO_BIG, TOO_SMALL = 2**31, -(2**31) - 1


@pytest.fixture
def staff_client() -> APIClient:
    staff = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(staff)
    return client


def _field_error(response, field: str) -> str:
    assert response.status_code == 400, response.content[:300]
    return " ".join(response.json()["error"]["fields"][field])


@pytest.mark.parametrize("value", [-301191248921, TOO_BIG, TOO_SMALL])
def test_priority_class_value_out_of_range_is_a_400(staff_client, value):
    response = staff_client.post("/api/v1/priority-classes/", {"name": "huge", "value": value}, format="json")
    assert "between -2147483648 and 2147483647" in _field_error(response, "value")
    assert not PriorityClass.objects.exists()


@pytest.mark.parametrize("value", [-(2**31), 2**31 - 1])
def test_priority_class_value_at_the_bounds_is_stored(staff_client, value):
    response = staff_client.post("/api/v1/priority-classes/", {"name": "edge", "value": value}, format="json")
    assert response.status_code == 201, response.content[:300]
    assert PriorityClass.objects.get(name="edge").value == value


def test_priority_class_update_out_of_range_keeps_the_row(staff_client):
    pc = services.priority_class_create(name="pc", value=5)
    response = staff_client.patch("/api/v1/priority-classes/pc/", {"value": TOO_BIG}, format="json")
    _field_error(response, "value")
    assert PriorityClass.objects.get(pk=pc.pk).value == 5


def test_queue_priority_and_weight_out_of_range(staff_client):
    response = staff_client.post("/api/v1/queues/", {"name": "q", "priority": TOO_BIG}, format="json")
    _field_error(response, "priority")
    response = staff_client.post("/api/v1/queues/", {"name": "q", "weight": TOO_BIG}, format="json")
    _field_error(response, "weight")
    assert not Queue.objects.filter(name="q").exists()


def test_task_priority_and_min_member_out_of_range(staff_client):
    services.queue_create(name="q")
    body = {"namespace": "ns", "name": "j", "queue": "q", "min_member": 1,
            "tasks": [{"name": "t0", "request": {"cpu": "1"}, "priority": TOO_SMALL}]}
    response = staff_client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert "between -2147483648 and 2147483647" in response.content.decode()
    body["tasks"][0]["priority"] = 1
    body["min_member"] = TOO_BIG
    response = staff_client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert not Job.objects.exists()

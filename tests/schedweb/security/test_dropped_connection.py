"""A persistent connection the database server dropped costs a read nothing and a write a 503.

Persistent connections get no per-request health check (settings: conn_health_checks off, one
round trip less per request), so the first query after the server dropped a connection is what
finds it dead. The server really terminates the backend here (pg_terminate_backend from a
second connection); nothing is mocked.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from schedweb.api.services import token_create
from schedweb.core.services import queue_create

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="terminates a PostgreSQL backend"),
    pytest.mark.django_db(transaction=True),  # outside a test transaction, as in production
]


def backend_pid() -> int:
    connection.ensure_connection()
    return connection.connection.info.backend_pid


def terminate(pid: int) -> None:
    with psycopg.connect(connection.connection.info.dsn, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)


@pytest.fixture
def api(django_user_model):
    user = django_user_model.objects.create_user(username="reader", password="pw", is_staff=True)
    queue_create(name="q1")
    return APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='t')[1]}")


def test_a_read_on_a_dropped_connection_is_retried_once_on_a_new_one(api):
    assert api.get("/api/v1/queues/").status_code == 200
    old = backend_pid()
    terminate(old)
    response = api.get("/api/v1/queues/")
    assert response.status_code == 200
    assert [q["name"] for q in response.json()["results"]] == ["q1"]
    assert backend_pid() != old


def test_a_write_on_a_dropped_connection_is_not_replayed(api):
    assert api.get("/api/v1/queues/").status_code == 200
    terminate(backend_pid())
    response = api.post("/api/v1/queues/", {"name": "q2"}, format="json")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "database_unavailable"
    # The next request finds the dead connection, replaces it, and the write was never applied.
    names = [q["name"] for q in api.get("/api/v1/queues/").json()["results"]]
    assert names == ["q1"]

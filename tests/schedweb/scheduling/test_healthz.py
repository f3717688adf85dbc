"""GET /healthz: public, 200 with database ok, 503 when the database is unreachable."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from schedweb.scheduling import healthz as views


@pytest.mark.django_db
def test_healthz_ok_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok", "database": "ok", "scheduler": {"state": "unknown"}}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_trailing_slash(client):
    assert client.get("/healthz/").status_code == 200


@pytest.mark.django_db
def test_healthz_503_when_database_unreachable(client, monkeypatch):
    class Broken:
        def cursor(self):
            raise OperationalError("connection refused")

    monkeypatch.setattr(views, "connection", Broken())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "error", "database": "error", "scheduler": {"state": "unknown"}}


@pytest.mark.django_db
def test_healthz_get_only(client):
    assert client.post("/healthz").status_code == 405

"""Fixtures shared by the web tests."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection


@pytest.fixture
def pg() -> Iterator[psycopg.Connection]:
    """A raw psycopg connection to the test database (the benches' loaders and floors use one)."""
    if connection.vendor != "postgresql":
        pytest.skip("the database benchmarks need PostgreSQL")
    s = connection.settings_dict
    conn = psycopg.connect(dbname=s["NAME"], user=s["USER"], password=s["PASSWORD"] or None,
                           host=s["HOST"] or None, port=s["PORT"] or None)
    yield conn
    conn.close()

"""Concurrent retries with one Idempotency-Key, on real connections: one job, both get it."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from schedweb.core.models import Job

from .conftest import job_body, make_queue


@pytest.mark.django_db(transaction=True)
def test_parallel_retries_create_one_job(make_user):
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers (PostgreSQL); SQLite's in-memory test database locks")
    user = make_user("sub")
    make_queue("leaf", submitter_users=[user])
    barrier = threading.Barrier(4)
    results: list[tuple[int, int]] = []

    def submit() -> None:
        client = APIClient()
        client.force_authenticate(user)
        barrier.wait()
        try:
            response = client.post("/api/v1/jobs/", job_body("leaf"), format="json",
                                   HTTP_IDEMPOTENCY_KEY="same-key")
            results.append((response.status_code, response.json()["id"]))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Job.objects.count() == 1
    assert results == [(201, Job.objects.get().id)] * 4

"""One simulated agent step at a time across scheduler instances (shards): a step that finds
another instance's step running skips, changing nothing, instead of doing its work twice."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from schedweb.core.models import Task
from schedweb.scheduling import agent, writes

from .conftest import make_cluster, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_step_skips_while_another_instance_holds_the_agent_lock():
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks need PostgreSQL")
    make_cluster()
    job = submit("a", tasks=1)
    Task.objects.filter(job=job).update(status="Binding", node_id=None)
    held, release = threading.Event(), threading.Event()

    def other_instance() -> None:
        try:
            with transaction.atomic():
                assert writes.try_leader_lock(agent.AGENT_LOCK_KEY)
                held.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=other_instance)
    thread.start()
    try:
        assert held.wait(30)
        step = agent.agent_step(now=timezone.now() + timedelta(seconds=1))
        assert step.skipped and step.started == 0
        assert Task.objects.get(job=job).status == "Binding"  # untouched: the other step's work
    finally:
        release.set()
        thread.join(30)
    step = agent.agent_step(now=timezone.now() + timedelta(seconds=1))
    assert not step.skipped and step.started == 1
    assert Task.objects.get(job=job).status == "Running"

"""Builders for dashboard view tests: the demo cluster, one cycle, users with queue roles."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from schedweb.core.models import Queue
from schedweb.scheduling.demo import load_demo


@pytest.fixture
def users(db) -> dict:
    """staff; lead (admin of research); submitter (submits to vision); viewer (no role)."""
    make = get_user_model().objects.create_user
    found = {"staff": make("staff", password="pw", is_staff=True), "lead": make("lead", password="pw"),
             "submitter": make("submitter", password="pw"), "viewer": make("viewer", password="pw")}
    return found


@pytest.fixture
def demo(users) -> dict:
    """The demo cluster with the ACLs of `users` (no scheduling cycle yet)."""
    load_demo()
    Queue.objects.get(name="research").admin_users.add(users["lead"])
    Queue.objects.get(name="vision").submitter_users.add(users["submitter"])
    return users


@pytest.fixture
def cycled(demo) -> dict:
    """The demo after one scheduling cycle (deserved shares, reasons, samples recorded)."""
    from schedweb.scheduling.cycle import cycle_run

    run = cycle_run()
    assert not run.errors and not run.skipped
    return demo


@pytest.fixture
def client_as():
    """client_as(user) -> a Django test client signed in as `user` (None = anonymous)."""

    def build(user=None) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return build

"""Builders for API tests: users with roles on team-a, queues, nodes and jobs made via services."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from schedweb.api import cache as api_cache
from schedweb.core import services


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    """No API body cached in this process's memory crosses from one test to the next."""
    api_cache.clear_local()
    yield
    api_cache.clear_local()


@pytest.fixture
def make_user(db):
    """Create a user: make_user("alice", staff=True, groups=["ml"])."""

    def build(username: str, *, staff: bool = False, groups: tuple[str, ...] = ()) -> Any:
        user = get_user_model().objects.create_user(username=username, password="pw", is_staff=staff)
        for name in groups:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
        return user

    return build


@pytest.fixture
def client_for():
    """An APIClient authenticated as `user` (None = anonymous)."""

    def build(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return build


def make_queue(name: str, parent=None, **kwargs: Any):
    """A queue via the service (parent is a Queue or None)."""
    return services.queue_create(name=name, parent=parent, **kwargs)


def make_node(name: str, cpu: str = "8", memory: str = "32Gi", pods: int = 110, **kwargs: Any):
    """A node via the service."""
    return services.node_create(name=name, allocatable={"cpu": cpu, "memory": memory, "pods": pods}, **kwargs)


def make_job(queue, name: str, *, namespace: str = "ns1", tasks: int = 2, cpu: str = "1",
             memory: str = "1Gi", min_member: int | None = None, user=None, **kwargs: Any):
    """A job of `tasks` identical tasks named <name>-<i>, via the service."""
    task_list = [{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": memory}} for i in range(tasks)]
    return services.job_submit(namespace=namespace, name=name, queue=queue, tasks=task_list,
                               min_member=tasks if min_member is None else min_member, submitted_by=user,
                               **kwargs)


def job_body(queue: str, name: str = "job1", *, namespace: str = "ns1", tasks: int = 2, **extra: Any) -> dict:
    """A JSON body for POST /api/v1/jobs/."""
    return {"namespace": namespace, "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": f"{name}-{i}", "request": {"cpu": "1", "memory": "1Gi"}}
                      for i in range(tasks)],
            **extra}


@pytest.fixture
def teams(db, make_user):
    """root > {team-a > {a1, a2}, team-b > {b1}} with admin/submitter/other/staff users on team-a."""
    users = {
        "admin_a": make_user("admin_a"),
        "submitter_a": make_user("submitter_a"),
        "other": make_user("other"),
        "staff": make_user("staff", staff=True),
    }
    team_a = make_queue("team-a", admin_users=[users["admin_a"]], submitter_users=[users["submitter_a"]])
    team_b = make_queue("team-b")
    queues = {"team-a": team_a, "team-b": team_b,
              "a1": make_queue("a1", team_a), "a2": make_queue("a2", team_a), "b1": make_queue("b1", team_b)}
    return users, queues

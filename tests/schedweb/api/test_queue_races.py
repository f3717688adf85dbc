"""Races on the queue tree, on real connections (PostgreSQL): each test holds the first request
inside its transaction, just past its checks, while a second conflicting request runs; the
second must wait for the first and then see what it committed (schedweb.core.queue_locks).

- two children raising their guarantees under one parent: one is refused (no write skew);
- a queue deleted while a job is submitted into it: a 400 for the delete or a JSON 409 for the
  submission, never a 500 (IntegrityError at COMMIT);
- a child created under a leaf while a job is submitted into it: one of them is refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from schedweb.core import job_store, queue_services
from schedweb.core.models import Job, Queue

from .conftest import job_body, make_queue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers (PostgreSQL); SQLite's test database locks")


class Race:
    """Run `first` until it returns from `owner.name` (inside its transaction), then `second`,
    then let `first` finish. Results: {"first": (status, body), "second": ...}."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
        self.reached, self.go = threading.Event(), threading.Event()
        self.results: dict[str, tuple[int, Any]] = {}
        original = getattr(owner, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            if threading.current_thread().name == "first":
                self.reached.set()
                self.go.wait(30)
            return out

        monkeypatch.setattr(owner, name, held)

    def _thread(self, name: str, call: Callable[[], Any]) -> threading.Thread:
        def run() -> None:
            try:
                response = call()
                body = response.json() if response.content and response["Content-Type"].startswith(
                    "application/json") else response.content[:200]
                self.results[name] = (response.status_code, body)
            finally:
                connection.close()

        thread = threading.Thread(target=run, name=name)
        thread.start()
        return thread

    def run(self, first: Callable[[], Any], second: Callable[[], Any]) -> dict[str, tuple[int, Any]]:
        """Both requests, the second started while the first holds its transaction open."""
        one = self._thread("first", first)
        assert self.reached.wait(30), self.results
        two = self._thread("second", second)
        two.join(1.0)  # with the locks it waits for the first to commit; without, it is done
        self.go.set()
        one.join(30)
        two.join(30)
        return self.results


@pytest.fixture
def staff(make_user) -> Callable[[], APIClient]:
    user = make_user("ops", staff=True)

    def client() -> APIClient:
        c = APIClient(raise_request_exception=False)
        c.force_authenticate(user)
        return c

    return client


def test_two_children_raising_their_guarantees_cannot_skew_the_parent(monkeypatch, staff):
    parent = make_queue("parent", capability={"cpu": "10"}, guarantee={"cpu": "10"})
    make_queue("c1", parent)
    make_queue("c2", parent)
    race = Race(monkeypatch, queue_services, "check_queue_limits")
    out = race.run(lambda: staff().patch("/api/v1/queues/c1/", {"guarantee": {"cpu": "6"}}, format="json"),
                   lambda: staff().patch("/api/v1/queues/c2/", {"guarantee": {"cpu": "6"}}, format="json"))
    assert out["first"][0] == 200
    assert out["second"] == (400, {"error": {
        "code": "invalid",
        "message": "guarantee: The guarantees of the child queues of 'parent' would add up "
                   "to cpu 12, above its guarantee cpu 10.",
        "fields": {"guarantee": ["The guarantees of the child queues of 'parent' would add up to cpu 12, "
                                 "above its guarantee cpu 10."]}}})
    assert sorted((q.name, q.guarantee) for q in Queue.objects.filter(parent__name="parent")) == [
        ("c1", {"cpu": 6000}), ("c2", None)]


def test_a_delete_waits_for_a_submission_into_the_queue_and_is_refused(monkeypatch, staff):
    make_queue("leaf")
    race = Race(monkeypatch, job_store, "lock_queues")
    out = race.run(lambda: staff().post("/api/v1/jobs/", job_body("leaf"), format="json"),
                   lambda: staff().delete("/api/v1/queues/leaf/"))
    assert out["first"][0] == 201
    assert out["second"][0] == 400
    assert out["second"][1]["error"]["fields"] == {"queue": ["Queue 'leaf' has jobs; it can be deleted once "
                                                             "they are gone."]}
    assert Job.objects.get().queue.name == "leaf"


def test_a_submission_into_a_queue_being_deleted_is_a_json_409(monkeypatch, staff):
    make_queue("leaf")
    race = Race(monkeypatch, queue_services, "_audit_queue")  # after the DELETE, before COMMIT
    out = race.run(lambda: staff().delete("/api/v1/queues/leaf/"),
                   lambda: staff().post("/api/v1/jobs/", job_body("leaf"), format="json"))
    assert out["first"][0] == 204
    assert out["second"] == (409, {"error": {
        "code": "conflict", "message": "queue: Queue 'leaf' was deleted while this job was being submitted.",
        "fields": {"queue": ["Queue 'leaf' was deleted while this job was being submitted."]}}})
    assert not Queue.objects.filter(name="leaf").exists() and not Job.objects.exists()


def test_a_child_created_under_a_leaf_being_submitted_into_is_refused(monkeypatch, staff):
    make_queue("leaf")
    race = Race(monkeypatch, job_store, "lock_queues")
    out = race.run(lambda: staff().post("/api/v1/jobs/", job_body("leaf"), format="json"),
                   lambda: staff().post("/api/v1/queues/", {"name": "kid", "parent": "leaf"}, format="json"))
    assert out["first"][0] == 201
    assert out["second"][0] == 400
    assert out["second"][1]["error"]["fields"] == {"parent": [
        "Queue 'leaf' holds jobs; only leaf queues hold jobs, so it cannot get child queues."]}
    assert not Queue.objects.filter(name="kid").exists()


def test_a_submission_into_a_leaf_getting_a_child_is_a_json_409(monkeypatch, staff):
    make_queue("leaf")
    race = Race(monkeypatch, queue_services, "_audit_queue")  # the child inserted, before COMMIT
    out = race.run(lambda: staff().post("/api/v1/queues/", {"name": "kid", "parent": "leaf"}, format="json"),
                   lambda: staff().post("/api/v1/jobs/", job_body("leaf"), format="json"))
    assert out["first"][0] == 201
    assert out["second"] == (409, {"error": {
        "code": "conflict",
        "message": "queue: Queue 'leaf' got child queues while this job was being submitted; jobs go into "
                   "leaf queues only.",
        "fields": {"queue": ["Queue 'leaf' got child queues while this job was being submitted; jobs go "
                             "into leaf queues only."]}}})
    assert not Job.objects.exists()

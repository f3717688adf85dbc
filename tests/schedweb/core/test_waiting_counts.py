"""schedweb.core.waiting_counts: exact counts in one statement, and PendingBudget's one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedweb.core import services
from schedweb.core.job_submission import PendingBudget
from schedweb.core.models import Job
from schedweb.core.waiting_counts import WaitingCounts, waiting_counts


def _job(queue: Any, name: str, user: Any, phase: str, key: str | None = None) -> Job:
    job = services.job_submit(namespace="ns", name=name, queue=queue, submitted_by=user, idempotency_key=key,
                              tasks=[{"name": f"{name}-0", "request": {"cpu": "1"}}])
    Job.objects.filter(pk=job.pk).update(phase=phase)
    return job


@pytest.fixture
def jobs(db) -> dict[str, Any]:
    """alice: 3 Pending + 2 Inqueue in q1/q2 and one each Running, Completed, Aborted, Cancelled;
    bob: 2 Pending in q1 and 1 Inqueue in q2; a job nobody submitted, Pending in q2; q3 empty."""
    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    q1, q2, q3 = (services.queue_create(name=n) for n in ("q1", "q2", "q3"))
    made = [(q1, "a1", alice, "Pending", "ka"), (q1, "a2", alice, "Pending", None),
            (q2, "a3", alice, "Pending", None), (q1, "a4", alice, "Inqueue", None),
            (q2, "a5", alice, "Inqueue", None), (q1, "a6", alice, "Running", None),
            (q2, "a7", alice, "Completed", None), (q1, "a8", alice, "Aborted", None),
            (q2, "a9", alice, "Cancelled", "kc"), (q1, "b1", bob, "Pending", "kb"),
            (q1, "b2", bob, "Pending", None), (q2, "b3", bob, "Inqueue", None),
            (q2, "n1", None, "Pending", None)]
    for queue, name, user, phase, key in made:
        _job(queue, name, user, phase, key)
    return {"alice": alice, "bob": bob, "q1": q1.pk, "q2": q2.pk, "q3": q3.pk}


def test_a_users_waiting_jobs_are_counted_exactly_and_capped(jobs):
    alice, bob = jobs["alice"].pk, jobs["bob"].pk
    assert waiting_counts(user_id=alice, user_cap=100).user == 5  # not Running/Completed/Aborted/Cancelled
    assert waiting_counts(user_id=bob, user_cap=100).user == 3   # not alice's, not the unowned job
    assert [waiting_counts(user_id=alice, user_cap=cap).user for cap in (1, 4, 5, 6)] == [1, 4, 5, 5]
    nobody = get_user_model().objects.create_user("carol")
    assert waiting_counts(user_id=nobody.pk, user_cap=10) == WaitingCounts(user=0)


def test_each_queues_waiting_jobs_over_every_submitter(jobs):
    counts = waiting_counts(queue_ids=[jobs["q1"], jobs["q2"], jobs["q3"]])
    # q1: a1 a2 a4 b1 b2; q2: a3 a5 b3 n1 (Completed a7 and Cancelled a9 left out); q3 none.
    assert counts.queues == {jobs["q1"]: 5, jobs["q2"]: 4, jobs["q3"]: 0}
    assert counts.user == 0 and not counts.known_key


def test_keys_are_the_users_own_and_names_must_exist(jobs):
    alice = jobs["alice"].pk
    assert waiting_counts(user_id=alice, keys=["ka"]).known_key
    assert waiting_counts(user_id=alice, keys=["kc"]).known_key  # a finished job's key is still used
    assert not waiting_counts(user_id=alice, keys=["kb", "nope"]).known_key  # kb is bob's
    assert waiting_counts(user_id=alice, keys=["nope", "ka"]).known_key
    assert waiting_counts(names=[("ns", "a1"), ("ns", "b3"), ("ns", "zz"), ("other", "a1")]).names_found == 2
    assert waiting_counts(names=[("ns", "a7"), ("ns", "a7")]).names_found == 1


def test_everything_asked_is_one_statement_and_nothing_asked_none(jobs):
    with CaptureQueriesContext(connection) as queries:
        counts = waiting_counts(user_id=jobs["alice"].pk, user_cap=3, queue_ids=[jobs["q2"], jobs["q3"]],
                                keys=["ka"], names=[("ns", "a1"), ("ns", "zz")])
    assert len(queries) == 1
    assert counts == WaitingCounts(user=3, queues={jobs["q2"]: 4, jobs["q3"]: 0}, known_key=True,
                                   names_found=1)
    with CaptureQueriesContext(connection) as queries:
        assert waiting_counts(user_id=jobs["alice"].pk, user_cap=0) == WaitingCounts()
        assert waiting_counts(keys=["ka"]) == WaitingCounts()  # a key is looked up for a user only
    assert len(queries) == 0


def test_pending_budget_counts_in_one_query(jobs, settings):
    settings.MAX_PENDING_JOBS_PER_USER, settings.MAX_PENDING_JOBS_PER_QUEUE = 6, 5
    with CaptureQueriesContext(connection) as queries:
        budget = PendingBudget(jobs["alice"], {jobs["q1"]: "q1", jobs["q2"]: "q2"})
    assert len(queries) == 1
    assert (budget.user_left, budget.queue_left) == (1, {jobs["q1"]: 0, jobs["q2"]: 1})
    over = budget.take(jobs["q1"], "Pending")
    assert over is not None and (over.scope, over.name) == ("queue", "q1")
    assert budget.take(jobs["q2"], "Pending") is None
    assert budget.take(jobs["q2"], "Pending").scope == "user"
    assert budget.take(jobs["q2"], "Running") is None  # a job that does not wait is not counted
    settings.MAX_PENDING_JOBS_PER_USER, settings.MAX_PENDING_JOBS_PER_QUEUE = 0, 0
    with CaptureQueriesContext(connection) as queries:
        budget = PendingBudget(jobs["alice"], {jobs["q1"]: "q1"})
    assert len(queries) == 0
    assert (budget.user_left, budget.queue_left) == (None, {})

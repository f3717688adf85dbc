"""Cached bodies of the queue tree and job lists (schedweb.api.cache): fresh after every change,
never across users who may read different things, ETag/304, answered with one query when cached."""

from __future__ import annotations

import threading

import pytest

from schedweb.api import cache as api_cache
from schedweb.api.services import token_create
from schedweb.api.views.queues import tree_body
from schedweb.core import services
from schedweb.core.job_services import task_set_status
from schedweb.core.models import Queue, Task
from schedweb.http.cache_backend import ResilientRedisCache

from .conftest import job_body, make_job, make_node, make_queue

TREE, JOBS = "/api/v1/queues/tree/", "/api/v1/jobs/?phase=Pending"


@pytest.fixture
def staff(make_user, client_for):
    return client_for(make_user("root-admin", staff=True))


def _leaf(tree: dict, *path: str) -> dict:
    node = tree
    for name in path:
        node = next(c for c in node["children"] if c["name"] == name)
    return node


def test_repeat_is_one_query_and_same_bytes_with_etag(staff, django_assert_num_queries):
    make_queue("leaf", make_queue("team"))
    first = staff.get(TREE)
    with django_assert_num_queries(1):  # the data version only
        second = staff.get(TREE)
    assert second.content == first.content and second["ETag"] == first["ETag"]
    assert first["Content-Type"] == "application/json"
    assert _leaf(first.json(), "team", "leaf")["figures"]["pending_jobs"] == 0


def test_another_worker_takes_the_body_from_the_shared_cache(staff, django_assert_num_queries):
    make_queue("q")
    first = staff.get(TREE)
    api_cache.clear_local()  # as in another gunicorn worker: nothing in its memory
    with django_assert_num_queries(1):
        again = staff.get(TREE)
    assert (again.content, again["ETag"]) == (first.content, first["ETag"])


@pytest.mark.parametrize("path", [TREE, JOBS])
def test_matching_etag_gets_304_and_a_stale_one_the_body(staff, path):
    make_job(make_queue("q"), "j1")
    body = staff.get(path)
    etag = body["ETag"]
    not_modified = staff.get(path, HTTP_IF_NONE_MATCH=etag)
    assert (not_modified.status_code, not_modified.content, not_modified["ETag"]) == (304, b"", etag)
    assert staff.get(path, HTTP_IF_NONE_MATCH=f'W/{etag}, "other"').status_code == 304
    changed = staff.get(path, HTTP_IF_NONE_MATCH='"not-it"')
    assert (changed.status_code, changed.content) == (200, body.content)


def test_a_new_cycle_invalidates_the_tree(make_user, client_for):
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.models import QueueSample

    make_queue("leaf", make_queue("team"))
    make_node("n1", cpu="8", memory="32Gi")
    client = client_for(make_user("reader", staff=True))
    assert client.post("/api/v1/jobs/", job_body("leaf", tasks=2), format="json").status_code == 201
    before = _leaf(client.get(TREE).json(), "team", "leaf")["figures"]
    assert (before["deserved"], before["share"], before["allocated"]) == (None, None, {})
    cycle_run()
    response = client.get(TREE)
    after = _leaf(response.json(), "team", "leaf")["figures"]
    # Hierarchical capacity (the shipped default): a queue without `deserved` deserves nothing
    # and lives on its capability (the cluster), like Volcano's capacity plugin.
    assert after["deserved"] == {"cpu": 0, "memory": 0}
    assert after["allocated"] == {"cpu": 2, "memory": 2 * 2**30}
    assert after["share"] == QueueSample.objects.get(queue="leaf").share
    assert response.json() == tree_body()  # what an uncached computation gives now


def test_a_queue_edit_invalidates_the_tree(staff):
    team = make_queue("team")
    make_queue("leaf", team)
    assert [_leaf(staff.get(TREE).json(), "team")[k] for k in ("weight", "state")] == [1, "Open"]
    assert staff.patch("/api/v1/queues/team/", {"weight": 3}, format="json").status_code == 200
    assert [_leaf(staff.get(TREE).json(), "team")[k] for k in ("weight", "state")] == [3, "Open"]
    services.queue_set_state(queue=Queue.objects.get(name="team"), state="Closed")
    assert [_leaf(staff.get(TREE).json(), "team")[k] for k in ("weight", "state")] == [3, "Closed"]
    services.queue_create(name="extra")
    assert [c["name"] for c in staff.get(TREE).json()["children"]] == ["default", "extra", "team"]


def test_submissions_and_task_reports_invalidate_the_job_list(staff):
    queue = make_queue("q")
    node = make_node("n1")
    job = make_job(queue, "j1", tasks=2)
    rows = staff.get("/api/v1/jobs/").json()["results"]
    assert [(r["name"], r["task_count"], r["running_count"], r["pending_count"]) for r in rows] == [
        ("j1", 2, 0, 2)]
    task = Task.objects.filter(job=job).order_by("name").first()
    Task.objects.filter(pk=task.pk).update(status="Bound", node=node)  # as a cycle's bind leaves it
    task.refresh_from_db()
    task_set_status(task=task, status="Running")  # the agent's report (saves: `updated` moves)
    rows = staff.get("/api/v1/jobs/").json()["results"]
    assert [(r["name"], r["running_count"], r["pending_count"]) for r in rows] == [("j1", 1, 1)]
    make_job(queue, "j2", tasks=1)
    rows = staff.get("/api/v1/jobs/").json()["results"]
    assert [(r["name"], r["task_count"]) for r in rows] == [("j2", 1), ("j1", 2)]


def test_each_url_has_its_own_body(staff):
    queue = make_queue("q")
    for name in ("a", "b", "c"):
        make_job(queue, name, tasks=1)
    first = staff.get("/api/v1/jobs/?ordering=name&limit=2").json()
    assert [r["name"] for r in first["results"]] == ["a", "b"]
    page = staff.get("/api/v1/jobs/?ordering=name&limit=2&offset=2").json()
    assert [r["name"] for r in page["results"]] == ["c"] and page["next"] is None
    assert page["previous"] == "http://testserver/api/v1/jobs/?limit=2&ordering=name"
    assert staff.get("/api/v1/jobs/?phase=Nope").status_code == 400


def test_no_cached_body_reaches_a_user_who_may_not_read(make_user, staff):
    make_queue("secret-team")
    assert staff.get(TREE).status_code == 200  # cached now
    from rest_framework.test import APIClient

    anonymous = APIClient().get(TREE)
    assert anonymous.status_code == 401 and b"secret-team" not in anonymous.content
    gone = make_user("gone")
    _, key = token_create(user=gone, name="t")
    gone.is_active = False
    gone.save()
    inactive = APIClient().get(TREE, HTTP_AUTHORIZATION=f"Token {key}")
    assert inactive.status_code == 401 and b"secret-team" not in inactive.content


def test_the_read_scope_is_part_of_the_key(make_user, client_for, monkeypatch, django_assert_num_queries):
    # Should reads ever differ per user, read_scope names what each may read: bodies never cross.
    monkeypatch.setattr(api_cache, "read_scope", lambda request: request.user.get_username())
    make_queue("q")
    alice, bob = client_for(make_user("alice")), client_for(make_user("bob"))
    first = alice.get(TREE)
    with django_assert_num_queries(1):
        alice.get(TREE)
    # Bob's key differs: computed for him (version, queues, task sums, pending jobs, samples, cycle).
    with django_assert_num_queries(6):
        assert bob.get(TREE).content == first.content


def test_while_another_thread_computes_the_previous_version_is_served(staff):
    queue = make_queue("q")
    make_job(queue, "j1", tasks=1)
    assert [r["name"] for r in staff.get("/api/v1/jobs/").json()["results"]] == ["j1"]
    make_job(queue, "j2", tasks=1)
    held = [lock for lock in api_cache._compute_locks if lock.acquire(blocking=False)]
    try:
        stale = staff.get("/api/v1/jobs/").json()["results"]
    finally:
        for lock in held:
            lock.release()
    assert [r["name"] for r in stale] == ["j1"]
    assert [r["name"] for r in staff.get("/api/v1/jobs/").json()["results"]] == ["j2", "j1"]


def test_a_body_past_its_ttl_is_served_while_another_thread_recomputes_it(staff, settings):
    # Same data version, only the TTL ran out: the other threads answer the body they have
    # instead of all queueing behind the one recomputation.
    make_job(make_queue("q"), "j1", tasks=1)
    first = staff.get("/api/v1/jobs/")
    settings.API_CACHE_SECONDS = 0  # every body is past its TTL
    held = [lock for lock in api_cache._compute_locks if lock.acquire(blocking=False)]
    waited = threading.Event()

    def rescue() -> None:  # were the read to wait for the locks, free it rather than hang
        waited.set()
        for lock in held:
            lock.release()

    timer = threading.Timer(5, rescue)
    timer.start()
    again = staff.get("/api/v1/jobs/")
    timer.cancel()
    if not waited.is_set():
        for lock in held:
            lock.release()
    assert not waited.is_set(), "the read waited for the recomputation"
    assert again.content == first.content and again["ETag"] == first["ETag"]


def test_browsable_api_is_not_cached(staff):
    make_queue("q")
    html = staff.get(TREE, HTTP_ACCEPT="text/html")
    assert html.status_code == 200 and html["Content-Type"].startswith("text/html") and "ETag" not in html


def test_shared_cache_down_still_answers_fresh_bodies(staff, monkeypatch):
    # The deployment's backend with its Redis gone (port 9 refuses connections here).
    down = ResilientRedisCache("redis://127.0.0.1:9/0", {"KEY_PREFIX": "api-test"})
    monkeypatch.setattr(api_cache, "cache", down)
    make_queue("q")
    first = staff.get(TREE)
    assert first.status_code == 200 and [c["name"] for c in first.json()["children"]] == ["default", "q"]
    assert down.down_until > 0  # Redis was tried, failed, and the process memory took over
    make_queue("r")
    second = staff.get(TREE)
    assert [c["name"] for c in second.json()["children"]] == ["default", "q", "r"]


def test_this_process_keeps_a_bounded_number_of_bytes(monkeypatch):
    monkeypatch.setattr(api_cache, "LOCAL_BYTES", 250)
    for i in range(5):
        api_cache._local_put(f"k{i}", api_cache.Body("v", '"e"', b"x" * 100, "application/json", 0.0))
    assert list(api_cache._local) == ["k3", "k4"] and api_cache._local_bytes == 200
    api_cache._local_put("k4", api_cache.Body("v2", '"e"', b"y" * 10, "application/json", 0.0))
    assert list(api_cache._local) == ["k3", "k4"] and api_cache._local_bytes == 110

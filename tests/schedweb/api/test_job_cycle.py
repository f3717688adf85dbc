"""Job bodies name the cycle whose decisions they reflect (`cycle: {id, started}`): the detail,
every list item (computed, prebuilt, served by the fast path), null before the first cycle and
in a submission's answer; skipped and failed cycles decided nothing and are never named."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from schedweb.api import cache as api_cache
from schedweb.api import prebuild
from schedweb.api.services import token_create
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun

from .conftest import make_job, make_node, make_queue

JOBS = "/api/v1/jobs/"


def _ref(run: CycleRun) -> dict:
    return {"id": run.id, "started": run.started.isoformat().replace("+00:00", "Z")}


@pytest.fixture
def staff(make_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(make_user("boss", staff=True))
    return client


@pytest.fixture
def cluster(db):
    make_node("n1", cpu="8", memory="32Gi")
    queue = make_queue("leaf")
    return make_job(queue, "j1", tasks=2)


def test_before_the_first_cycle_no_cycle_is_named(cluster, staff):
    assert staff.get(f"{JOBS}{cluster.id}/").json()["cycle"] is None
    assert [j["cycle"] for j in staff.get(JOBS).json()["results"]] == [None]


def test_detail_and_list_items_name_the_newest_cycle_that_decided(cluster, staff):
    first = cycle_run()
    detail = staff.get(f"{JOBS}{cluster.id}/").json()
    assert (detail["phase"], detail["cycle"]) == ("Inqueue", _ref(first))  # its bind is that cycle's
    make_job(cluster.queue, "j2", tasks=1)
    second = cycle_run()
    # Skipped and failed cycles wrote no decisions: the bodies still name `second`.
    CycleRun.objects.create(started=second.started, skipped=True)
    CycleRun.objects.create(started=second.started, errors="RuntimeError: boom")
    items = staff.get(JOBS).json()["results"]
    assert [(j["name"], j["cycle"]) for j in items] == [("j2", _ref(second)), ("j1", _ref(second))]
    assert staff.get("/api/v1/namespaces/ns1/jobs/j1/").json()["cycle"] == _ref(second)
    assert staff.post(f"{JOBS}{cluster.id}/suspend/").json()["cycle"] == _ref(second)


def test_a_submission_is_seen_by_no_cycle_yet(cluster, staff):
    cycle_run()
    body = {"namespace": "ns1", "name": "new", "queue": "leaf", "tasks": [{"name": "t"}]}
    assert staff.post(JOBS, body, format="json").json()["cycle"] is None
    batch = staff.post(f"{JOBS}batch/", {"jobs": [{**body, "name": "b1"}]}, format="json").json()
    assert batch["results"][0]["job"]["cycle"] is None


def test_a_cached_list_names_the_cycle_of_its_version(cluster, staff):
    first = cycle_run()
    assert staff.get(JOBS).json()["results"][0]["cycle"] == _ref(first)
    second = cycle_run()  # a new data version: the body is computed again
    assert staff.get(JOBS).json()["results"][0]["cycle"] == _ref(second)


def test_prebuilt_and_fast_path_bodies_carry_the_cycle(cluster, make_user, settings):
    settings.API_PREBUILD_BUDGET_S = 0
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])
    api = APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=make_user('alice'), name='t')[1]}")
    try:
        api.get(JOBS)  # now a wanted body: the cycle process builds it after each cycle
        run = cycle_run()
        api_cache.clear_local()  # another web process: it finds the body the cycle built
        assert api.get(JOBS).json()["results"][0]["cycle"] == _ref(run)
    finally:
        cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])

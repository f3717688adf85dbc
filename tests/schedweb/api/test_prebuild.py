"""Bodies built by the cycle process after each cycle (schedweb.api.prebuild): the ones readers
wanted, byte for byte what the view computes, found by readers without computing; readers answer
their previous body while the cycle process builds, and compute as before otherwise."""

from __future__ import annotations

import hashlib
import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import RequestFactory
from rest_framework.test import APIClient

from schedweb.api import cache as api_cache
from schedweb.api import prebuild
from schedweb.api.services import token_create
from schedweb.core.models import Job
from schedweb.scheduling.cycle import cycle_run

from .conftest import make_job, make_node, make_queue

TREE, JOBS = "/api/v1/queues/tree/", "/api/v1/jobs/"
FAST = "schedweb.api.fastpath.FastPathMiddleware"
WANTED = [TREE, JOBS + "?phase=Pending", JOBS + "?state=waiting", JOBS]


@pytest.fixture(autouse=True)
def _no_prebuild_state(settings):
    """Neither the wanted list nor the cycle process's state crosses between tests (Redis); no
    time budget (test_prebuild_bounds tests it on a clock of its own)."""
    settings.API_PREBUILD_BUDGET_S = 0
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])
    yield
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])


@pytest.fixture
def computed(monkeypatch) -> list[tuple[str, str]]:
    """(who, full path) of every body computed: "cycle" when prebuilding, else "reader"."""
    seen: list[tuple[str, str]] = []
    compute = api_cache._compute

    def counting(view, request, *args):
        seen.append(("reader" if api_cache._prebuilt.get() is None else "cycle", request.get_full_path()))
        return compute(view, request, *args)

    monkeypatch.setattr(api_cache, "_compute", counting)
    return seen


@pytest.fixture
def api(make_user) -> APIClient:
    return APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=make_user('alice'), name='t')[1]}")


@pytest.fixture
def cluster(db):
    make_node("n1", cpu="8", memory="32Gi")
    queue = make_queue("leaf", make_queue("team"))
    make_job(queue, "j1", tasks=2)
    make_job(queue, "j2", tasks=1)
    return queue


def _another_worker_reads(api: APIClient, paths: list[str]) -> dict:
    api_cache.clear_local()  # a web process that has none of the bodies in its memory
    return {path: api.get(path) for path in paths}


def test_a_cycle_builds_the_wanted_bodies_byte_for_byte(cluster, api, computed):
    before = {path: api.get(path) for path in WANTED}
    assert computed == [("reader", path) for path in WANTED]
    assert [r["name"] for r in before[JOBS + "?phase=Pending"].json()["results"]] == ["j2", "j1"]
    computed.clear()
    run = cycle_run()  # binds all three tasks: every body changes
    assert run.binds == 3
    assert sorted(computed) == sorted(("cycle", path) for path in WANTED)
    computed.clear()
    after = _another_worker_reads(api, WANTED)
    assert computed == []  # every reader found its body built
    assert after[JOBS + "?phase=Pending"].json()["results"] == []
    assert [(r["name"], r["phase"]) for r in after[JOBS].json()["results"]] == [("j2", "Inqueue"),
                                                                              ("j1", "Inqueue")]
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])
    cache.clear()  # nothing cached anywhere: the view computes each body now
    fresh = _another_worker_reads(api, WANTED)
    assert computed == [("reader", path) for path in WANTED]
    for path in WANTED:
        assert after[path].status_code == fresh[path].status_code == 200
        assert after[path].content == fresh[path].content, path
        assert after[path]["ETag"] == fresh[path]["ETag"] != before[path]["ETag"]


def test_the_readers_host_scheme_and_page_links_are_kept(cluster, make_user, computed, settings):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "api.example.org"]
    key = token_create(user=make_user("bob"), name="t")[1]
    api = APIClient(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="api.example.org")
    path = JOBS + "?ordering=name&limit=1"
    api.get(path, secure=True)
    cycle_run()
    computed.clear()
    api_cache.clear_local()
    body = api.get(path, secure=True)
    assert computed == []
    next_page = body.json()["next"]
    assert next_page.startswith("https://api.example.org/api/v1/jobs/?continue=")
    assert next_page.endswith("&limit=1&ordering=name")
    assert api.get(path).json()["next"].startswith("http://api.example.org/")  # another body: computed
    assert computed == [("reader", path)]


@pytest.mark.parametrize(("query", "wanted"), [
    ("", True), ("phase=Pending", True), ("phase=Pending&phase=Inqueue", True), ("state=waiting", True),
    ("queue=leaf&ordering=-created&limit=100", True), ("format=json", True),
    ("limit=100", True), ("limit=101", False), ("limit=x", False),
    ("search=j1", False), ("offset=50", False), ("limit=10&offset=10", False), ("page=2", False),
])
def test_first_pages_of_common_job_lists_are_wanted(query, wanted):
    request = RequestFactory().get(JOBS + ("?" + query if query else ""))
    got = prebuild.wanted_of(request, "job-list", "application/json")
    assert (got is not None) == wanted
    if wanted:
        assert (got.endpoint, got.scheme, got.host, got.path_info, got.query) == (
            "job-list", "http", "testserver", JOBS, query)
    assert prebuild.wanted_of(RequestFactory().get(TREE + "?x=1"), "queue-tree", "application/json") is None
    assert prebuild.wanted_of(RequestFactory().get(TREE), "queue-list", "application/json") is None


def test_other_urls_are_computed_by_readers_as_before(cluster, api, computed):
    paths = [JOBS + "?search=j", JOBS + "?offset=1", "/api/v1/jobs/?phase=Pending&phase=Running"]
    for path in paths:
        api.get(path)
    computed.clear()
    cycle_run()
    assert computed == [("cycle", paths[2])]
    _another_worker_reads(api, paths)
    assert computed == [("cycle", paths[2])] + [("reader", path) for path in paths[:2]]


def _base() -> str:
    (base,) = cache.get(prebuild.WANTED_KEY)
    return base


@pytest.mark.parametrize(("state", "grace", "waits"), [
    ("building", 1.0, True),  # the cycle process builds this body: the previous one meanwhile
    ("building", 0.0, False),  # ... but never longer than API_PREBUILD_GRACE
    ("done", 1.0, False),  # it has built this cycle's bodies: this version is another writer's
    ("other-body", 1.0, False),  # it builds other bodies only
    ("inactive", 1.0, False),  # no cycle process built anything lately
    ("none", 1.0, False),
])
def test_readers_answer_the_previous_body_while_the_cycle_process_builds(
        cluster, api, computed, settings, state, grace, waits):
    settings.API_PREBUILD_GRACE = grace
    first = api.get(TREE)
    old = api_cache.data_version()
    settings.API_PREBUILD = False  # the cycle binds; its bodies are left to the state set below
    assert cycle_run().binds == 3
    new = api_cache.data_version()
    assert prebuild.cycle_of(new) > prebuild.cycle_of(old)
    base = _base()
    states = {"building": prebuild.State(frozenset({base}), prebuild.cycle_of(old), time.time() + 30),
              "done": prebuild.State(frozenset({base}), prebuild.cycle_of(new), time.time() + 30),
              "other-body": prebuild.State(frozenset({"x"}), prebuild.cycle_of(old), time.time() + 30),
              "inactive": prebuild.State(frozenset({base}), prebuild.cycle_of(old), time.time() - 1)}
    if state in states:
        cache.set(prebuild.STATE_KEY, states[state])
    computed.clear()
    again = api.get(TREE)
    assert again.status_code == 200
    assert (again["ETag"] == first["ETag"], computed) == (waits, [] if waits else [("reader", TREE)])


def test_a_failed_prebuild_leaves_the_cycle_and_its_transaction_alone(cluster, api, computed, monkeypatch):
    api.get(TREE)
    api.get(JOBS)

    def broken_tree():
        with connection.cursor() as cur:
            cur.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr("schedweb.api.views.queues.tree_body", broken_tree)
    computed.clear()
    run = cycle_run()
    assert (run.binds, run.errors) == (3, "")
    assert sorted(computed) == [("cycle", JOBS), ("cycle", TREE)]  # one failed, the other built
    assert Job.objects.count() == 2  # the enclosing (test) transaction is still usable


def test_off_by_setting(cluster, api, computed, settings):
    api.get(TREE)
    settings.API_PREBUILD = False
    computed.clear()
    assert cycle_run().binds == 3 and computed == []
    assert prebuild.after_cycle() == 0
    _another_worker_reads(api, [TREE])
    assert computed == [("reader", TREE)]


def test_the_newest_wanted_bodies_are_built_at_most_max(cluster, api, computed, settings):
    settings.API_PREBUILD_MAX = 2
    paths = [JOBS + "?phase=Pending", JOBS + "?phase=Running", TREE]
    for path in paths:
        api.get(path)
    entries = cache.get(prebuild.WANTED_KEY)
    by_path = {wanted.path_info + wanted.query: base for base, (wanted, _) in entries.items()}
    now = time.time()
    ages = {JOBS + "phase=Pending": 5, JOBS + "phase=Running": 1, TREE: prebuild.IDLE_SECONDS + 1}
    cache.set(prebuild.WANTED_KEY, {by_path[p]: (entries[by_path[p]][0], now - a) for p, a in ages.items()})
    make_job(cluster, "j3", tasks=1)  # a new version
    computed.clear()
    assert prebuild.after_cycle() == 2
    assert computed == [("cycle", JOBS + "?phase=Running"), ("cycle", JOBS + "?phase=Pending")]
    state = cache.get(prebuild.STATE_KEY)
    assert state.bases == {by_path[JOBS + "phase=Running"], by_path[JOBS + "phase=Pending"]}
    assert state.done == prebuild.cycle_of(api_cache.data_version())


def test_a_reader_notes_its_url_at_most_once_a_minute(cluster, api, monkeypatch):
    api.get(TREE)
    (entry,) = cache.get(prebuild.WANTED_KEY).values()
    writes: list[str] = []
    monkeypatch.setattr(prebuild, "note_wanted", lambda *args: writes.append("noted"))
    make_job(cluster, "j3", tasks=1)  # a new version: the next read misses again
    api.get(TREE)
    assert writes == [] and cache.get(prebuild.WANTED_KEY) == {_base(): entry}


def test_nothing_wanted_means_no_state_and_no_query(db, django_assert_num_queries):
    cache.set(prebuild.STATE_KEY, prebuild.State(frozenset({"x"}), 1, time.time() + 30))
    with django_assert_num_queries(0):
        assert prebuild.after_cycle() == 0
    assert cache.get(prebuild.STATE_KEY) is None


@pytest.mark.parametrize(("values", "cycle"), [((12, 3, 4, 5), 12), ((None, None, 7, 1), -1), ((0, 1), 0)])
def test_a_data_version_names_its_cycle(values, cycle):
    version = api_cache.version_digest(values)
    assert prebuild.cycle_of(version) == cycle and version.startswith(f"{values[0]}:")
    assert version != api_cache.version_digest((*values[:-1], "other"))


def _key(endpoint: str, url: str) -> str:
    """body_key of a JSON read of `url` (http://testserver...) by any signed-in user."""
    return hashlib.sha1(f"{endpoint}|all-signed-in|application/json|http://testserver{url}".encode()).hexdigest()


@pytest.mark.parametrize(("claimed", "grace", "waits"), [
    (True, 1.0, True),  # another web process computes it: the previous body meanwhile
    (True, 0.0, False),  # ... for API_PREBUILD_GRACE at most
    (False, 1.0, False),  # nobody does: this process computes it (and claims it)
])
@pytest.mark.parametrize("fast", [True, False])
def test_a_body_another_web_process_computes_is_not_computed_again(
        cluster, api, computed, settings, claimed, grace, waits, fast):
    settings.API_PREBUILD_GRACE = grace
    if not fast:  # the view's cached_json, else the fast path's cached_body
        settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != FAST]
    first = api.get(JOBS)
    make_job(cluster, "j3", tasks=1)
    claim = f"{api_cache._shared_key(_key('job-list', JOBS), api_cache.data_version())}:claim"
    if claimed:
        cache.set(claim, 1)
    computed.clear()
    again = api.get(JOBS)
    names = [r["name"] for r in again.json()["results"]]
    assert (names, computed) == ((["j2", "j1"], []) if waits else (["j3", "j2", "j1"], [("reader", JOBS)]))
    assert (again.content == first.content) == waits
    assert cache.get(claim) == 1  # set by the other process, or by this one while it computed

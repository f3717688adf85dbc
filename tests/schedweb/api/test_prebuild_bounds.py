"""Prebuilds are bounded and counted (issue 33): an unusual ordering is its reader's to compute,
a cycle spends at most API_PREBUILD_BUDGET_S building bodies, and what it spent is in the cycle's
timing (`prebuild_s`, `prebuild_bodies`, `prebuild_skipped`)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.test import APIClient

from schedweb.api import prebuild
from schedweb.api.services import token_create
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.models import CycleRun

from .conftest import make_job, make_node, make_queue

JOBS = "/api/v1/jobs/"


@pytest.fixture(autouse=True)
def _no_prebuild_state():
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])
    yield
    cache.delete_many([prebuild.WANTED_KEY, prebuild.STATE_KEY])


@pytest.mark.parametrize(("query", "wanted"), [
    ("ordering=-created", True), ("ordering=name", True), ("ordering=created", True),
    ("ordering=-min_member", False), ("ordering=name,namespace", False), ("ordering=-queue__name", False),
    ("phase=Pending&ordering=-updated", False),
])
def test_only_the_usual_orderings_are_prebuilt(query, wanted):
    got = prebuild.wanted_of(RequestFactory().get(f"{JOBS}?{query}"), "job-list", "application/json")
    assert (got is not None) == wanted


class Clock:
    """Moves only while a body is built: each build costs `step` seconds."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 1000.0, step

    def __call__(self) -> float:
        return self.t


def test_a_cycle_spends_at_most_its_budget_and_records_the_time(make_user, settings, monkeypatch):
    settings.API_PREBUILD_BUDGET_S = 0.4
    make_node("n1", cpu="8", memory="32Gi")
    queue = make_queue("leaf")
    make_job(queue, "j1", tasks=1)
    api = APIClient(HTTP_AUTHORIZATION=f"Token {token_create(user=make_user('alice'), name='t')[1]}")
    for query in ("phase=Pending", "state=waiting", "queue=leaf", "namespace=ns1"):
        assert api.get(f"{JOBS}?{query}").status_code == 200  # four bodies wanted
    clock = Clock(0.25)
    build = prebuild._build

    def costly(wanted):
        build(wanted)
        clock.t += clock.step

    monkeypatch.setattr(prebuild, "clock", clock)
    monkeypatch.setattr(prebuild, "_build", costly)
    run = cycle_run()
    timing = CycleRun.objects.get(pk=run.pk).timing
    # 0 s and 0.25 s spent before the first two: built; 0.5 s before the others: left to readers.
    assert (timing["prebuild_s"], timing["prebuild_bodies"], timing["prebuild_skipped"]) == (0.5, 2, 2)
    assert len(cache.get(prebuild.STATE_KEY).bases) == 2  # readers wait only for what was built


def test_nothing_wanted_records_nothing(db):
    run = cycle_run()
    assert "prebuild_s" not in CycleRun.objects.get(pk=run.pk).timing

"""A new plugin needs no edit outside its package and the factory list: the dashboard's readers
of declarations (queue fields, the explanation form, the limit figure, the score hint) see a
plugin that is only listed in plugins/factory.py (here: by the test, through `listed`)."""

from __future__ import annotations

import pytest

from scheduler_core.framework.conf import parse_conf
from scheduler_core.framework.interface import Plugin
from schedweb.dashboard import job_page
from schedweb.dashboard.conf_fields import ignored_fields, queue_plugins
from schedweb.dashboard.explain import explain
from schedweb.scheduling import cycle
from schedweb.scheduling.placement_scores import OTHER_HINT, plugin_hint
from tests.scheduler_core.listed import listed

WHY = "the quota plugin reads no weight"


class Quota(Plugin):
    """A queue plugin and a node-order plugin at once, declared as a new plugin would be."""

    name = "_t_quota"
    score_hint = "nodes the test prefers"
    limit_figure = "real_capability"
    ceiling_figures = ("real_capability",)
    explanation_form = "configured-deserved"

    @classmethod
    def ignored_queue_fields(cls, option, *, is_leaf):
        return {"weight": WHY}


@pytest.fixture
def quota():
    with listed(Quota):
        yield parse_conf('actions: "allocate, reclaim"\ntiers:\n- plugins:\n  - name: _t_quota\n')


def test_the_readers_see_a_plugin_listed_only_in_the_factory(quota, monkeypatch):
    assert "_t_quota" in queue_plugins()
    assert ignored_fields(quota, is_leaf=True) == {"weight": WHY}
    assert plugin_hint("_t_quota") == "nodes the test prefers"
    story = explain({"plugin": "_t_quota", "spec_deserved": {"cpu": 10.0}}, "q")
    assert story.sentences[0].startswith("The capacity plugin starts from the deserved configured")
    monkeypatch.setattr(cycle, "active_conf", lambda: (None, quota))
    assert job_page._limit_figure() == "real_capability"


def test_unlisted_the_plugin_is_unknown_again():
    with listed(Quota):
        assert plugin_hint("_t_quota") == "nodes the test prefers"
    assert "_t_quota" not in queue_plugins()
    assert plugin_hint("_t_quota") == OTHER_HINT
    assert explain({"plugin": "_t_quota"}, "q").sentences == [
        "The _t_quota plugin computed this queue's share."]

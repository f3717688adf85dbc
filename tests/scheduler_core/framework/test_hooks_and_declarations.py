"""The framework knows plugins only through the registry: the factories fill it, a plugin checks
its own arguments and declares what the web shows, explanations come in through session hooks."""

from __future__ import annotations

import pytest

from scheduler_core.actions.factory import ACTIONS
from scheduler_core.explain.session_hooks import EXPLAIN
from scheduler_core.framework.conf import ConfError, parse_conf
from scheduler_core.framework.hooks import SessionHooks
from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.registry import action_builders, load_all, plugin_class, plugin_classes
from scheduler_core.framework.session import close_session, open_session
from scheduler_core.plugins import factory
from scheduler_core.plugins.factory import PLUGINS
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot


class Strict(Plugin):
    """A test plugin, registered only by being listed in the factory."""

    name = "_t_strict"

    @classmethod
    def check_arguments(cls, arguments):
        if arguments.get("limit", 1) > 0:
            return []
        return [f"limit must be positive, got {arguments['limit']}"]


@pytest.fixture
def listed(monkeypatch):
    """The factory list with Strict added (the registry reloads it, and again once undone)."""
    monkeypatch.setattr(factory, "PLUGINS", (*PLUGINS, Strict))
    yield
    monkeypatch.undo()
    load_all()


def _waiting():
    # Two tasks of 3 cpu on one 4-cpu node, gang of 2: it never fits.
    gang = job("g", tasks=replicas("w", 2, cpu="3"), min_available=2)
    return snapshot(nodes=[node("n1", cpu="4")], jobs=[gang])


def test_the_factories_list_exactly_what_is_registered():
    listed = {cls.name for cls in PLUGINS}
    registered = set(plugin_classes())
    assert listed == registered == {
        "binpack", "capacity", "conformance", "drf", "gang", "nodeorder", "overcommit", "predicates",
        "priority", "proportion", "rescheduling", "resourcequota", "sla", "usage"}
    assert {cls.name for cls in ACTIONS} == set(action_builders) == {
        "allocate", "backfill", "enqueue", "preempt", "reclaim"}


def test_a_session_without_hooks_builds_no_reasons_and_the_same_decisions():
    cfg = conf("enqueue, allocate", [["gang", "predicates", "proportion"]])
    bare = close_session(open_session(_waiting(), cfg))
    explained = close_session(open_session(_waiting(), cfg, hooks=EXPLAIN))
    assert bare.reasons == {}
    assert [str(r.code) for r in explained.reasons.values()] == ["NeverFits"]
    assert (bare.binds, bare.job_phase) == (explained.binds, explained.job_phase)


def test_the_hooks_the_caller_passes_are_the_ones_called():
    seen: list[str] = []
    hooks = SessionHooks(reasons=lambda ssn: seen.append("reasons") or {"x": "y"},
                         scores=lambda ssn, record: seen.append(f"scores {record}") or None)
    ssn = open_session(_waiting(), conf("allocate", [["gang"]]), record_scores=3, hooks=hooks)
    assert close_session(ssn).reasons == {"x": "y"}
    assert seen == ["scores 3", "reasons"]


def test_parse_conf_lists_what_a_plugin_refuses_in_its_arguments(listed):
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: _t_strict\n    arguments: {limit: %s}\n'
    assert parse_conf(text % 1).plugin("_t_strict").arguments == {"limit": 1}
    with pytest.raises(ConfError) as err:
        parse_conf(text % -2)
    assert err.value.problems == ["plugin _t_strict: limit must be positive, got -2"]


def test_capacity_checks_its_own_level_argument():
    with pytest.raises(ConfError) as err:
        parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: capacity\n'
                   '    arguments: {ancestorReclaimLevel: -1}\n')
    assert err.value.problems == [
        "plugin capacity: ancestorReclaimLevel must be a non-negative integer, got -1"]


def test_what_the_web_reads_is_declared_by_the_plugins():
    hints = {name: cls.score_hint for name, cls in plugin_classes().items() if cls.score_hint}
    assert sorted(hints) == ["binpack", "nodeorder", "usage"]
    figures = {name: cls.limit_figure for name, cls in plugin_classes().items() if cls.limit_figure}
    assert figures == {"proportion": "deserved", "capacity": "real_capability"}
    assert (plugin_class("proportion").explanation_form, plugin_class("capacity").explanation_form) == (
        "weight-rounds", "configured-deserved")
    assert plugin_class("gang").ignored_queue_fields(parse_conf(
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n').plugin("gang"), is_leaf=True) is None
    assert plugin_class("nope") is None

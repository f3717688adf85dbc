"""Test plugins and actions, registered the one way there is: listed in the factories."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from scheduler_core.actions import factory as action_factory
from scheduler_core.framework.interface import Plugin
from scheduler_core.framework.registry import load_all
from scheduler_core.plugins import factory as plugin_factory


@contextmanager
def listed(*classes: type) -> Iterator[None]:
    """The factory lists with `classes` appended (Plugin subclasses to PLUGINS, the others to
    ACTIONS) while the block runs; the registry reloads the lists, and again once restored."""
    saved = plugin_factory.PLUGINS, action_factory.ACTIONS
    plugin_factory.PLUGINS = (*saved[0], *(c for c in classes if issubclass(c, Plugin)))
    action_factory.ACTIONS = (*saved[1], *(c for c in classes if not issubclass(c, Plugin)))
    try:
        load_all()
        yield
    finally:
        plugin_factory.PLUGINS, action_factory.ACTIONS = saved
        load_all()

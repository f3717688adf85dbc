"""Pure-Python Volcano-style batch scheduler core (no Django). Entry point: `run_session`."""

from collections.abc import Sequence
from typing import Any

from scheduler_core.framework import registry as _registry

__all__ = ["run_session"]


def _factory_lists() -> tuple[Sequence[type], Sequence[type]]:
    # The package root is the one module above every layer: it tells the framework's registry
    # where the plugins and actions are listed (plugins/factory.py, actions/factory.py); the
    # lists are read when first needed, and again if a test swaps one.
    from scheduler_core.actions import factory as actions
    from scheduler_core.plugins import factory as plugins

    return plugins.PLUGINS, actions.ACTIONS


_registry.add_source(_factory_lists)


def run_session(snapshot: Any, conf: Any = None) -> Any:
    """Lazy alias of `scheduler_core.scheduler.run_session` (keeps `import scheduler_core` cheap)."""
    from scheduler_core.scheduler import run_session as _run

    return _run(snapshot, conf)

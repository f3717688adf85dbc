"""Pure-Python Volcano-style batch scheduler core (no Django). Entry point: `run_session`."""

from typing import Any

from scheduler_core.framework import registry as _registry

__all__ = ["run_session"]


def _load_builders() -> None:
    # The package root is the one module above every layer: it tells the framework's registry
    # where the plugins and actions are (plugins/factory.py, actions/factory.py), loaded on first use.
    import scheduler_core.actions.factory  # noqa: F401
    import scheduler_core.plugins.factory  # noqa: F401


_registry.add_loader(_load_builders)


def run_session(snapshot: Any, conf: Any = None) -> Any:
    """Lazy alias of `scheduler_core.scheduler.run_session` (keeps `import scheduler_core` cheap)."""
    from scheduler_core.scheduler import run_session as _run

    return _run(snapshot, conf)

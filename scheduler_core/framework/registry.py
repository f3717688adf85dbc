"""Registries of plugin and action classes, filled by decorators at import time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", bound=type)

plugin_builders: dict[str, type] = {}
action_builders: dict[str, type] = {}


def _registrar(registry: dict[str, type], name: str) -> Callable[[T], T]:
    def deco(cls: T) -> T:
        cls.name = name
        registry[name] = cls
        return cls

    return deco


def register_plugin(name: str) -> Callable[[T], T]:
    """Class decorator: register a Plugin subclass under `name` (also sets `cls.name`)."""
    return _registrar(plugin_builders, name)


def register_action(name: str) -> Callable[[T], T]:
    """Class decorator: register an Action subclass under `name` (also sets `cls.name`)."""
    return _registrar(action_builders, name)


def load_all() -> None:
    """Import the plugin and action factories so every listed class registers."""
    import scheduler_core.actions.factory  # noqa: F401
    import scheduler_core.plugins.factory  # noqa: F401

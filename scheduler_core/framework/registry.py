"""Registries of plugin and action classes, filled by decorators at import time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", bound=type)

plugin_builders: dict[str, type] = {}
action_builders: dict[str, type] = {}


def register_plugin(name: str) -> Callable[[T], T]:
    """Class decorator: register a Plugin subclass under `name` (also sets `cls.name`)."""

    def deco(cls: T) -> T:
        cls.name = name
        plugin_builders[name] = cls
        return cls

    return deco


def register_action(name: str) -> Callable[[T], T]:
    """Class decorator: register an Action subclass under `name` (also sets `cls.name`)."""

    def deco(cls: T) -> T:
        cls.name = name
        action_builders[name] = cls
        return cls

    return deco


def load_all() -> None:
    """Import every plugin and action module so their decorators run."""
    import scheduler_core.actions  # noqa: F401
    import scheduler_core.plugins  # noqa: F401

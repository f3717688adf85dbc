"""Registries of plugin and action classes, filled by decorators when the factories import them.

The package root (scheduler_core/__init__.py) installs the loader that imports the factories, as
upstream's scheduler binary imports its plugins package: the framework knows plugins only here.
"""

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


_loaders: list[Callable[[], None]] = []


def add_loader(load: Callable[[], None]) -> None:
    """Install a function that registers builders (the package root installs the factories' one)."""
    _loaders.append(load)


def load_all() -> None:
    """Run the installed loaders (importing plugins/factory.py and actions/factory.py registers
    every listed class); the framework itself never imports a plugin or an action."""
    for load in _loaders:
        load()


def plugin_class(name: str) -> type | None:
    """The registered class of plugin `name` (its declarations: score_hint, limit_figure, ...)."""
    load_all()
    return plugin_builders.get(name)


def plugin_classes() -> dict[str, type]:
    """Every registered plugin class by name, in registration order."""
    load_all()
    return dict(plugin_builders)

"""Registries of plugin and action classes, filled from the two factory lists.

The factories (`plugins/factory.py` `PLUGINS`, `actions/factory.py` `ACTIONS`, as upstream's
`factory.go`) are the one registration: a class is registered because it is listed, under its
`name` class attribute. The package root (scheduler_core/__init__.py) installs the source that
reads the lists, so the framework never imports a plugin or an action.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# () -> (plugin classes, action classes): the lists as they are now (read on every load).
Source = Callable[[], tuple[Sequence[type], Sequence[type]]]

plugin_builders: dict[str, type] = {}
action_builders: dict[str, type] = {}

_sources: list[Source] = []
_loaded: list[tuple[Sequence[type], Sequence[type]]] | None = None


def add_source(source: Source) -> None:
    """Install a function returning the factory lists (the package root installs the one)."""
    _sources.append(source)


def _fill(registry: dict[str, type], classes: Sequence[type], kind: str) -> None:
    wanted: dict[str, type] = {}
    for cls in classes:
        name = getattr(cls, "name", "")
        if not name or name in wanted:
            raise ValueError(f"{kind} {cls.__qualname__}: name {name!r} is empty or listed twice")
        wanted[name] = cls
    for name in [n for n in registry if n not in wanted]:
        del registry[name]
    registry.update(wanted)  # entry by entry: a reader never sees an empty registry


def load_all() -> None:
    """Fill the registries from the installed sources' lists (nothing to do when the lists are
    the ones already loaded: the common case, a few identity checks)."""
    global _loaded
    lists = [source() for source in _sources]
    if _loaded is not None and len(lists) == len(_loaded) and all(
            a is c and b is d for (a, b), (c, d) in zip(lists, _loaded, strict=True)):
        return
    _fill(plugin_builders, [cls for plugins, _ in lists for cls in plugins], "plugin")
    _fill(action_builders, [cls for _, actions in lists for cls in actions], "action")
    _loaded = lists


def plugin_class(name: str) -> type | None:
    """The registered class of plugin `name` (its declarations: score_hint, limit_figure, ...)."""
    load_all()
    return plugin_builders.get(name)


def plugin_classes() -> dict[str, type]:
    """Every registered plugin class by name, in factory order."""
    load_all()
    return dict(plugin_builders)

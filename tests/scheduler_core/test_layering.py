"""The floor order of scheduler_core, read from the source (ast) of every module.

Ground floor up: the values (`model`, `resources`, `result`, `shapes*`: they import only one
another), the `framework/`, the
plugins (`plugins/<name>/`, sharing only `plugins/util/`), the actions (`actions/<name>/`,
sharing `actions/util/` and `actions/victims/`), the explanations (`explain/`), then the entry
points (`scheduler`, `forecast/`, `bench/`, `scenario*`, `__main__`). An import may only point
down. Every import counts: module level, inside functions, and under `if TYPE_CHECKING:` (an
annotation is a dependency too), except that annotation-only imports never close a cycle
(they are not executed). The two factories (`plugins/factory.py`, `actions/factory.py`) and the
package root, which installs them in the registry, are the only modules that know every plugin
or action; the lists are the one registration (no decorator registers a class).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.import_cycles import cycles

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scheduler_core"
UP_FROM_FRAMEWORK = ("plugins", "actions", "explain", "forecast", "bench", "scheduler", "scenario",
                     "scenario_check", "scenario_cluster", "scenario_fields", "__main__")
SHARED_ACTION_PACKAGES = ("util", "victims")
VALUES = ("model", "job_log", "resources", "result")  # job_log: the snapshot's job table
REGISTRATION_DECORATORS = ("register_plugin", "register_action")


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` (module names) at `line`; `typing` = only under TYPE_CHECKING."""

    source: str
    target: str
    line: int
    typing: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside `if TYPE_CHECKING:` blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


@cache
def _parsed(path: Path) -> tuple[ast.Module, frozenset[int]]:
    tree = ast.parse(path.read_text(), str(path))
    return tree, frozenset(_type_checking_nodes(tree))


def imports(name: str, path: Path, known: set[str] | frozenset[str]) -> list[tuple[str, int, bool]]:
    """(imported name, line, under TYPE_CHECKING) for every import in the module, any depth."""
    tree, typing = _parsed(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno, id(node) in typing) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if full in known else base, node.lineno, id(node) in typing))
    return out


def edges() -> list[Edge]:
    mods = modules()
    known = set(mods)
    out = []
    for name, path in mods.items():
        for target, line, typing in imports(name, path, known):
            while target and target not in known and "." in target:
                target = target.rpartition(".")[0]  # `import a.b.c` of an attribute path: its module
            if target in known and target != name:
                out.append(Edge(name, target, line, typing))
    return out


def external(name: str, path: Path) -> list[tuple[str, int]]:
    found = imports(name, path, frozenset())
    return [(t, line) for t, line, _ in found if not t.startswith("scheduler_core")]


def _floor(name: str) -> tuple[str, ...]:
    return tuple(name.split(".")[1:])


def _where(e: Edge) -> str:
    return f"{modules()[e.source].relative_to(ROOT)}:{e.line}: {e.source} imports {e.target}"


ALL_EDGES = edges()


def test_no_django_or_schedweb_anywhere():
    bad = [f"{path.relative_to(ROOT)}:{line}: {t}" for name, path in modules().items()
           for t, line in external(name, path) if t.split(".")[0] in {"django", "schedweb", "rest_framework"}]
    assert bad == []


def _is_value(name: str) -> bool:
    floor = _floor(name)
    return len(floor) == 1 and (floor[0] in VALUES or floor[0].startswith("shapes"))


def test_values_import_only_values():
    # The ground floor: a snapshot, a resource or a result means the same without the scheduler.
    bad = [_where(e) for e in ALL_EDGES if _is_value(e.source) and not _is_value(e.target)]
    assert bad == []


def test_the_framework_imports_nothing_above_it():
    bad = [_where(e) for e in ALL_EDGES
           if _floor(e.source)[:1] == ("framework",) and _floor(e.target)[:1] and
           _floor(e.target)[0] in UP_FROM_FRAMEWORK]
    assert bad == []


def _plugin_package(name: str) -> str | None:
    floor = _floor(name)
    if len(floor) >= 2 and floor[0] == "plugins" and floor[1] not in {"util", "factory"}:
        return floor[1]
    return None


def test_no_plugin_imports_another_plugin():
    bad = []
    for e in ALL_EDGES:
        src, dst = _floor(e.source), _floor(e.target)
        if src[:1] != ("plugins",) or src[1:2] == ("factory",):
            continue
        if dst[:1] in {("actions",), ("explain",)} or (dst[:1] == ("plugins",) and dst[1:2] == ("factory",)):
            bad.append(_where(e))
        elif _plugin_package(e.target) is not None and _plugin_package(e.target) != _plugin_package(e.source):
            bad.append(_where(e))  # plugins/util/ counts as no plugin: it may not import one either
    assert bad == []


def _action_breaks_floor(e: Edge) -> bool:
    src, dst = _floor(e.source), _floor(e.target)
    if _plugin_package(e.target) is not None or dst[:1] == ("explain",) or dst[:2] == ("plugins", "factory"):
        return True
    other_action = dst[:1] == ("actions",) and len(dst) > 2 and dst[1] != src[1]
    return other_action and dst[1] not in SHARED_ACTION_PACKAGES


def test_actions_import_no_plugin_and_no_other_action():
    bad = [_where(e) for e in ALL_EDGES
           if _floor(e.source)[:1] == ("actions",) and _floor(e.source)[1:2] != ("factory",)
           and _action_breaks_floor(e)]
    assert bad == []


def test_explanations_import_no_action_and_no_plugin():
    # explain/ reads the session's results; shared helpers (plugins/util/) are allowed.
    bad = [_where(e) for e in ALL_EDGES if _floor(e.source)[:1] == ("explain",) and (
        _floor(e.target)[:1] == ("actions",) or _plugin_package(e.target) is not None
        or _floor(e.target)[:2] == ("plugins", "factory"))]
    assert bad == []


def test_no_decorator_registers_a_class():
    # The factory lists are the one registration: nothing named like the old decorators exists.
    bad = []
    for path in modules().values():
        tree, _ = _parsed(path)
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) \
                else node.name if isinstance(node, ast.FunctionDef) else None
            if name in REGISTRATION_DECORATORS:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert bad == []


def test_the_factories_list_every_plugin_and_action_class():
    import importlib

    from scheduler_core.actions.factory import ACTIONS
    from scheduler_core.framework.interface import Action, Plugin
    from scheduler_core.plugins.factory import PLUGINS

    found: dict[type, set[type]] = {Plugin: set(), Action: set()}
    for name in modules():
        floor = _floor(name)
        if floor[:1] in {("plugins",), ("actions",)} and len(floor) == 3:
            for value in vars(importlib.import_module(name)).values():
                for base, seen in found.items():
                    if isinstance(value, type) and issubclass(value, base) and value is not base \
                            and value.__module__ == name:
                        seen.add(value)
    assert found[Plugin] == set(PLUGINS)
    assert found[Action] == set(ACTIONS)


def test_no_import_cycles_module_or_function_level():
    graph: dict[str, set[str]] = {}
    for e in ALL_EDGES:
        if not e.typing:
            graph.setdefault(e.source, set()).add(e.target)
    assert cycles(graph) == []


@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected


def test_a_function_level_import_counts(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from scheduler_core.plugins.gang import gang\n")
    assert imports("scheduler_core.m", src, {"scheduler_core.plugins.gang.gang"}) == [
        ("scheduler_core.plugins.gang.gang", 2, False)]

"""Layering of the web side (docs/architecture.md, "Floors"), read from the source with `ast`.

- schedweb's apps stand on floors: http < audit < core < scheduling < api, dashboard (< bench).
  An app imports only apps of lower floors; the two apps of the top floor never import each
  other; no app imports the project modules (settings, urls, celery, wsgi, asgi).
- scheduler_core (below every app) imports neither Django nor schedweb nor schedctl.
- schedctl imports only the standard library, PyYAML and itself.
- Every write goes through schedweb.core.services: only schedweb.core imports the job store's
  writer (insert_drafts) or takes the queue locks (lock_queues).
- No import cycle inside the dashboard: selectors query, presenters shape.

Every import statement counts, at module level or inside a function, absolute or relative.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.import_cycles import cycles

ROOT = Path(__file__).resolve().parents[2]
# Lowest first; apps of one floor may not import each other.
FLOORS: list[set[str]] = [
    {"http"}, {"audit"}, {"core"}, {"scheduling"}, {"api", "dashboard"}, {"bench"},
]
FLOOR_OF = {app: level for level, apps in enumerate(FLOORS) for app in apps}
PROJECT_MODULES = {"settings", "settings_production", "urls", "celery", "wsgi", "asgi"}
# Below the services: what writes cluster objects directly.
STORE_WRITERS = {"schedweb.core.job_store.insert_drafts", "schedweb.core.queue_locks.lock_queues"}
SCHEDCTL_ALLOWED = {"yaml", "schedctl"}


def _module_of(path: Path) -> str:
    """The dotted module name of a file under ROOT (a package's __init__ is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """What every import statement in `source` imports, as absolute dotted names (relative ones
    resolved against `module`): `import a.b` gives a.b, `from a.b import c` gives a.b.c."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def sources(package: str) -> Iterator[tuple[str, str, set[str]]]:
    """(file, module, imported names) of every Python file of `package` (migrations left out:
    Django writes them)."""
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        module = _module_of(path)
        text = path.read_text(encoding="utf-8")
        names = imported_names(text, module, is_package=path.name == "__init__.py")
        yield path.relative_to(ROOT).as_posix(), module, names


def app_of(name: str) -> str | None:
    """The schedweb app (or project module) a dotted name belongs to; None outside schedweb."""
    parts = name.split(".")
    if parts[0] != "schedweb" or len(parts) < 2:
        return None
    return parts[1]


def floor_violation(importer: str, imported: str) -> str | None:
    """Why module `importer` may not import `imported` (None when it may)."""
    src, dst = app_of(importer), app_of(imported)
    if src is None or dst is None or src == dst or src in PROJECT_MODULES:
        return None
    if dst in PROJECT_MODULES:
        return f"an app imports the project module schedweb.{dst}"
    if src not in FLOOR_OF or dst not in FLOOR_OF:
        return f"schedweb.{src if src not in FLOOR_OF else dst} is on no floor (add it to FLOORS)"
    if FLOOR_OF[dst] > FLOOR_OF[src]:
        return f"{src} imports {dst}, a higher floor"
    if FLOOR_OF[dst] == FLOOR_OF[src]:
        return f"{src} imports {dst}, of the same floor"
    return None


def floor_violations() -> set[tuple[str, str, str]]:
    """(file, imported name, why) for every import across schedweb's floors the wrong way."""
    found: set[tuple[str, str, str]] = set()
    for file, module, names in sources("schedweb"):
        for name in names:
            why = floor_violation(module, name)
            if why is not None:
                found.add((file, name, why))
    return found


def top_level(name: str) -> str:
    return name.partition(".")[0]


def module_graph(package: str) -> dict[str, set[str]]:
    """{module: modules of `package` it imports}; `from m import f` counts as importing m."""
    files = list(sources(package))
    known = {module for _, module, _ in files}
    graph: dict[str, set[str]] = {}
    for _, module, names in files:
        targets = set()
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


@pytest.mark.parametrize(("source", "module", "is_package", "expected"), [
    pytest.param("import schedweb.api.models", "schedweb.dashboard.x", False, {"schedweb.api.models"},
                 id="import"),
    pytest.param("from schedweb.api import services as s", "schedweb.dashboard.x", False,
                 {"schedweb.api.services"}, id="from-package"),
    pytest.param("from schedweb import api", "schedweb.audit.x", False, {"schedweb.api"}, id="from-root"),
    pytest.param("def f():\n    from ..api.units import to_api\n", "schedweb.dashboard.forms", False,
                 {"schedweb.api.units.to_api"}, id="relative-in-function"),
    pytest.param("from .models import AuditEntry", "schedweb.audit", True,
                 {"schedweb.audit.models.AuditEntry"}, id="package-init"),
    pytest.param("import schedweb.apiary\ns = 'schedweb.api'", "schedweb.audit.x", False, {"schedweb.apiary"},
                 id="look-alike-and-string"),
])
def test_imported_names(source: str, module: str, is_package: bool, expected: set[str]) -> None:
    assert imported_names(source, module, is_package=is_package) == expected


@pytest.mark.parametrize(("importer", "imported", "why"), [
    ("schedweb.api.views.jobs", "schedweb.core.services", None),
    ("schedweb.dashboard.views.audit", "schedweb.audit.models.AuditEntry", None),
    ("schedweb.core.job_services", "schedweb.audit.services.record", None),
    ("schedweb.core.job_services", "schedweb.core.job_store", None),
    ("schedweb.urls", "schedweb.api.urls", None),
    ("schedweb.bench.api_bench", "schedweb.api.views", None),
    ("schedweb.audit.display", "schedweb.dashboard.units", "audit imports dashboard, a higher floor"),
    ("schedweb.core.views", "schedweb.scheduling.health", "core imports scheduling, a higher floor"),
    ("schedweb.dashboard.forms", "schedweb.api.units", "dashboard imports api, of the same floor"),
    ("schedweb.api.views", "schedweb.dashboard.units", "api imports dashboard, of the same floor"),
    ("schedweb.http.middleware", "schedweb.core.models", "http imports core, a higher floor"),
    ("schedweb.scheduling.tasks", "schedweb.celery", "an app imports the project module schedweb.celery"),
    ("schedweb.apiary.x", "schedweb.core", "schedweb.apiary is on no floor (add it to FLOORS)"),
    ("schedweb.core.models", "scheduler_core.resources", None),
])
def test_floor_violation(importer: str, imported: str, why: str | None) -> None:
    assert floor_violation(importer, imported) == why


def test_apps_import_only_lower_floors() -> None:
    assert floor_violations() == set()


def test_every_app_is_on_a_floor_in_settings_order() -> None:
    """PROJECT_APPS lists the apps floor by floor (the order the architecture document draws)."""
    from django.conf import settings

    apps = [name.removeprefix("schedweb.") for name in settings.PROJECT_APPS]
    assert sorted(apps, key=FLOOR_OF.__getitem__) == apps
    on_disk = {p.parent.name for p in (ROOT / "schedweb").glob("*/__init__.py")}
    assert on_disk == set(FLOOR_OF)


def test_scheduler_core_imports_no_web_code() -> None:
    found = {(file, name) for file, _, names in sources("scheduler_core") for name in names
             if top_level(name) in {"django", "rest_framework", "schedweb", "schedctl"}}
    assert found == set()


def test_schedctl_imports_only_the_standard_library_and_pyyaml() -> None:
    found = {(file, name) for file, _, names in sources("schedctl") for name in names
             if top_level(name) not in sys.stdlib_module_names | SCHEDCTL_ALLOWED}
    assert found == set()


def test_only_the_services_write_through_the_store() -> None:
    found = {(file, name) for file, module, names in sources("schedweb") for name in names
             if app_of(module) != "core" and name in STORE_WRITERS}
    assert found == set()


@pytest.mark.parametrize(("graph", "expected"), [
    pytest.param({"a": {"b"}, "b": {"c"}, "c": set()}, [], id="chain"),
    pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]], id="circle"),
    pytest.param({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]], id="two"),
])
def test_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert sorted(cycles(graph)) == expected


def test_module_graph_reads_from_imports_as_the_module() -> None:
    graph = module_graph("schedweb.dashboard")
    assert "schedweb.dashboard.units" in graph["schedweb.dashboard.job_reason"]
    assert "schedweb.dashboard.pending" in graph["schedweb.dashboard.share_waits"]


def test_no_import_cycle_inside_the_dashboard() -> None:
    assert cycles(module_graph("schedweb.dashboard")) == []
